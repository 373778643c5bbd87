from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, logits, k=0):
        self.prepare_sampler()
        logits = self.scale(logits)
        self.sampler.reset()
        return self.sampler(logits, k)

    def forward(self, batch):
        tokens = self.prepare(batch)
        self.run(tokens)
        return self.result
