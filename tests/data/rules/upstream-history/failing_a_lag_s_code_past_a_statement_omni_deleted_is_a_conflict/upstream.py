from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        group = self.group()
        self.warm()
        self.check(tokens, group)
        hidden = self.model(tokens, group=group)
        return self.run(hidden)
