from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        batch.validate()
        tokens = self.prepare(batch)
        self.stats.update(batch)
        self.check(tokens)
        self.count(tokens)
        # ---------- Omni-new ----------
        return self.run_stages(tokens)
        # ---------- Omni-new ----------
