from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def run(self, batch):
        out = self.model(batch)
        # ---------- Omni-new ----------
        stages = self.omni_stages(batch)
        # ---------- Omni-new ----------
        if self.aux:
            out, aux = self.split_aux(out)
        out = self.post_stages(out, stages)
        return out
