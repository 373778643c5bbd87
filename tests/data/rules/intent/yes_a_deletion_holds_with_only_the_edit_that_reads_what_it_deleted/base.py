from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, batch):
        self.prepare(batch)
        self.check(batch)
        self.trace(batch)
        out = self.pack(batch)
        stats = self.book(out)
        self.flush()
        return self.wrap(out, stats)
