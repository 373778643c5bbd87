from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.sync_device()
        output = self.run(tokens)
        self.trace(output)
        return output
