from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.trace(tokens)
        count = self.pad(self.buffer, tokens, batch.size)
        return self.run(tokens, count)
