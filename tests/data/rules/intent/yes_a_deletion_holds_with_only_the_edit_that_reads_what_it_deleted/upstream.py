from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, batch):
        self.sync_device()
        self.prepare(batch)
        self.check(batch)
        self.trace(batch)
        out = self.pack(batch)
        stats, nans = self.book(out, count_nans=True)
        self.flush()
        return self.wrap(out, stats, nans)
