from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, batch):
        out = self.compute(batch)
        with self.timer("draft"):
            self.finalize()
            self.draft(out)
        self.log(out)
        return out
