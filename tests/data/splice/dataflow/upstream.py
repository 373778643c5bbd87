from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self.a = 1
        self.b = 2
        self.c = 3
        self.d = 4
        self.prepare(batch)
        tokens = batch.tokens
        self.run(batch)
        return self.result

    def sample(self, logits):
        self.prepare_sampler()
        self.sampler.warm_up()
        self.sampler.reset()
        return self.sampler(logits)
