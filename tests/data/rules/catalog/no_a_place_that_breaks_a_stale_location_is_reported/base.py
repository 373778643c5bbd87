from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self.start(batch)
        self.finalize_step(batch)
        return self.result
