from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        state = self.load(batch)
        self.check(batch)
        self.step(batch)
        return self.result
