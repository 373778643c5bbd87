from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        output = self.run(batch)
        # ---------- Omni-new ----------
        self.finalize_connector()
        # ---------- Omni-new ----------
        self.log(output)
        return output
