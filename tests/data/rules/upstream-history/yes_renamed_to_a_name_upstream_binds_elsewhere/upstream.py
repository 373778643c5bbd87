from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch, strict=True)
        out = self.run(tokens)
        output = self.pack(out)
        return output
