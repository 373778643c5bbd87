from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        state = self.begin(batch)
        result = self.execute(state)
        return self.complete(result)
