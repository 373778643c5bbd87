from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, batch):
        output = self.sample_tokens(batch)
        result = Result(output, batch.ids)
        return result
