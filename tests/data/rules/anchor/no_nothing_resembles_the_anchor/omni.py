from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        tokens = self.omni_filter(tokens)
        # ---------- Omni-new ----------
        output = self.run(tokens)
        return self.finish(output)
