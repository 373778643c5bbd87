from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        count = self.pad(tokens, batch.size)
        return self.run(tokens, count)
