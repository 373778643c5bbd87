from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, logits, k=2):
        self.prepare_sampler()
        if self.temperature:
            logits = self.scale(logits, self.temperature)
        else:
            logits = self.scale(logits)
        self.sampler.reset()
        return self.sampler(logits, k)

    def forward(self, batch):
        ids = self.prepare(batch)
        self.run(ids)
        return self.result
