from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        tokens = self.add_omni_tokens(tokens)
        # ---------- Omni-new ----------
        out = self.run(tokens)
        self.log(tokens)
        return out
