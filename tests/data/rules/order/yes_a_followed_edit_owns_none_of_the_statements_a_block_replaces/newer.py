from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, batch):
        output = self.sample_tokens(batch)
        result = Result(output, batch.ids)
        if self.timing and self.timing.enabled and hasattr(self, "start"):
            self.record_time()
        return result
