from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.check(tokens)
        positions = self.positions(tokens)
        self.stats.update(tokens, positions)
        # ---------- Omni-new ----------
        result = self.run_stages(tokens, positions)
        # ---------- Omni-new ----------
        if not self.async_mode:
            self.tick(result)
            self.tock()
            self.tack()
            return result
        return self.wrap(result)
