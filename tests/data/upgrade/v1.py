from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        self.sampler.reset()
        return self.sampler(logits)

    def forward(self, batch):
        self.prepare(batch)
        self.run(batch)
        return self.result
