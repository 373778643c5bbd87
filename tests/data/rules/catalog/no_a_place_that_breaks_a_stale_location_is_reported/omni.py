from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        self.start(batch)
        # ---------- Omni-new ----------
        self.note(batch)
        # ---------- Omni-new ----------
        self.finalize_step(batch)
        return self.result
