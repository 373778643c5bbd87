from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        self.sampler.warm_up()
        self.sampler.apply(logits)
        self.finish(logits)
        self.sampler.reset()
        return self.sampler(logits)
