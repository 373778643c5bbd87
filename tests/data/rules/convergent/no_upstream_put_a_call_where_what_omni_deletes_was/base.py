from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        if self.legacy_backend:
            if self.capture_experts:
                self.expert_capturer.clear_buffer()
        tokens = self.prepare(batch)
        out = self.run(tokens)
        self.log(tokens)
        return out
