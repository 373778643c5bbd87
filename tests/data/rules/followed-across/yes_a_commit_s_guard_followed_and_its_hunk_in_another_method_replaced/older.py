from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        return self.run(tokens)

    def sample(self, hidden):
        logits = self.logits(hidden)
        return self.pick(logits)
