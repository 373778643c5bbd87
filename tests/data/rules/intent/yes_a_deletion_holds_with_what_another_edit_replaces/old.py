from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, batch):
        out = self.pack(batch)
        stats = self.book(out)
        self.flush()
        return self.wrap(out, stats)
