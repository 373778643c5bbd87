from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        hidden = self.run_stages(tokens, batch.stages)
        # ---------- Omni-new ----------
        return self.sample(hidden)
