from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def dummy_run(self, batch):
        out = self.model(batch)
        if self.aux_outputs:
            hidden = out[0]
        else:
            hidden = out
        self.dummy_logits(hidden)
        if self.balancer:
            self.balancer.step()
        # ---------- Omni-new ----------
        hidden = self.split_outputs(hidden)
        # ---------- Omni-new ----------
        return hidden
