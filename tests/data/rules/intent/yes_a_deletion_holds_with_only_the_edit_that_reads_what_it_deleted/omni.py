from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, batch):
        self.prepare(batch)
        self.check(batch)
        self.trace(batch, level=2)
        self.sync_device()
        out = self.pack(batch)
        self.flush()
        # ---------- Omni-new ----------
        return self.omni_wrap(out)
        # ---------- Omni-new ----------
