from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        out = self.run(tokens)
        self.flush()
        return out
