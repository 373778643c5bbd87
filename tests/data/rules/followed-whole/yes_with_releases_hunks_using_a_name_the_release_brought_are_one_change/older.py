from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        batch.validate()
        tokens = self.prepare(batch)
        self.stats.update(batch)
        self.check(tokens)
        self.count(tokens)
        return self.run(tokens)
