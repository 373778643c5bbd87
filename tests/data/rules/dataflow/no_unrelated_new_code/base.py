from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self.start(batch)
        self.finish(batch)
        return self.result
