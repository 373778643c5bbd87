from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if not tokens:
            return self.empty()
        return self.run(tokens)

    def sample(self, hidden):
        logits = self.logits(hidden)
        self.count(logits)
        return self.pick(logits)
