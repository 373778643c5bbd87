from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        output = self.run_model(tokens)
        self.record(output)
        return output
