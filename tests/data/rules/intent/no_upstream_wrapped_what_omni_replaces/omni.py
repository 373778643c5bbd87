from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        output = self.run_stages(tokens, batch.stages)
        # ---------- Omni-new ----------
        self.record(output)
        return output
