from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def dummy_run(self, batch):
        out = self.model(batch)
        if self.aux_outputs:
            hidden = out[0]
        else:
            hidden = out
        self.dummy_logits(hidden)
        if self.balancer:
            self.balancer.step()
        return hidden
