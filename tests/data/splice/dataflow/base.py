from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = batch.tokens
        self.a = 1
        self.b = 2
        self.c = 3
        self.d = 4
        self.prepare(batch)
        self.run(batch)
        return self.result

    def sample(self, logits):
        self.prepare_sampler()
        self.sampler.reset()
        return self.sampler(logits)
