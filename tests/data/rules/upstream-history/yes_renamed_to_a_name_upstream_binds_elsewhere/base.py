from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        out = self.run(tokens)
        if self.timing:
            self.sync()
            out.ms = self.elapsed()
        output = self.pack(out)
        return output
