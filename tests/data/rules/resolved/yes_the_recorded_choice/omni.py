from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        self.start(batch)
        # ---------- Omni-new ----------
        self.omni_one(batch)
        # ---------- Omni-new ----------
        self.p(batch)
        # ---------- Omni-new ----------
        self.omni_two(batch)
        # ---------- Omni-new ----------
        self.q(batch)
        self.end(batch)
