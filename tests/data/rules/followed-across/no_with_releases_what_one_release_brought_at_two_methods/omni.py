from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        return self.run(tokens)

    def sample(self, hidden):
        logits = self.logits(hidden)
        # ---------- Omni-new ----------
        self.count(logits, stage=self.stage)
        # ---------- Omni-new ----------
        return self.pick(logits)
