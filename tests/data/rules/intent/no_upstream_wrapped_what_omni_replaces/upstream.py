from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        with self.timer():
            output = self.run(tokens)
        self.record(output)
        return output
