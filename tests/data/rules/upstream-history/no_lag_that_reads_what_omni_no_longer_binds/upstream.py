from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.check(tokens)
        positions = self.positions(tokens)
        self.stats.update(tokens, positions)
        out = self.run(tokens, positions)
        if not self.async_mode:
            self.tick(out)
            self.tock()
            self.flush(out)
            self.tack()
            return out
        return self.wrap(out)
