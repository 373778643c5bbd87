from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        out = self.run(tokens, strict=True)
        self.flush()
        return out
