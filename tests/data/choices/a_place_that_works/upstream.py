from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.flush(tokens)
        self.sync(tokens, 1)
        self.sync(tokens, 2)
        output = self.run(tokens)
        return output
