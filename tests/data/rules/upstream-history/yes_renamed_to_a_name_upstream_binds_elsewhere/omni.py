from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        output = self.run_omni(tokens)
        # ---------- Omni-new ----------
        if self.timing:
            self.sync()
            output.ms = self.elapsed()
        return output
