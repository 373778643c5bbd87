from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.warm()
        self.check(tokens)
        hidden = self.model(tokens)
        return self.run(hidden)
