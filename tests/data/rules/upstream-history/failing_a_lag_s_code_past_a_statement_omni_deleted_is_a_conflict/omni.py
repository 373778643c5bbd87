from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.check(tokens)
        # ---------- Omni-new ----------
        hidden = self.omni_model(tokens)
        # ---------- Omni-new ----------
        return self.run(hidden)
