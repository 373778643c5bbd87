from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self._start_step()
        tokens = self.prepare(batch)
        out = self.run(tokens)
        self.log(tokens, level=2)
        return out

    def _start_step(self):
        if self.capture_experts:
            self.expert_capturer.clear_buffer()
