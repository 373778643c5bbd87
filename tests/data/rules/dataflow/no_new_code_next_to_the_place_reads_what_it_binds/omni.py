from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        state = self.load(batch)
        self.check(batch)
        # ---------- Omni-new ----------
        state = self.wrap(state, limits)
        # ---------- Omni-new ----------
        self.step(batch)
        return self.result
