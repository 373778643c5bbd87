from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        batch.validate()
        tokens = self.prepare(batch)
        self.stats.update(batch)
        self.check(tokens, self.config.strict, len(batch))
        self.count(tokens)
        self.flush()
        return self.run(tokens, self.config.mode, len(tokens))
