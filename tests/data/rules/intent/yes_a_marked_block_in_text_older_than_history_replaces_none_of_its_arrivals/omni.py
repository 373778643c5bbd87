from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        ready = self.prepare(batch)
        # ---------- Omni-new ----------
        total = 0
        # ---------- Omni-new ----------
        return self.run(ready, total)
