from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.flush(tokens)
        self.sync(tokens)
        output = self.run(tokens)
        return output
