from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def finish(self, batch):
        output = self.pack(batch)
        # ---------- Omni-new ----------
        stages = self.omni_stages(batch)
        # ---------- Omni-new ----------
        self.flush()
        return self.wrap_stages(output, stages)
