from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, batch):
        out = self.pack(batch)
        self.flush()
        # ---------- Omni-new ----------
        return self.omni_wrap(out)
        # ---------- Omni-new ----------
