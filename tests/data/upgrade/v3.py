from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, logits, generator=None):
        self.prepare_sampler()
        self.sampler.warm_up()
        self.sampler.reset()
        self.sampler.seed(generator)
        return self.sampler(logits)

    def forward(self, batch):
        self.prepare(batch)
        self.run(batch)
        return self.result

    def capture(self):
        return self.graphs.capture()
