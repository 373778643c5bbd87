from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.register_outputs(batch)
        # ---------- Omni-new ----------
        self.launch(batch)
        return self.result
