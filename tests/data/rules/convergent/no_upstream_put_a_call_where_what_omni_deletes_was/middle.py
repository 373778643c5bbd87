from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self._reset_step()
        tokens = self.prepare(batch)
        out = self.run(tokens)
        self.log(tokens)
        return out

    def _reset_step(self):
        self.step_ms = None
        self.routing.drop_buffers()
