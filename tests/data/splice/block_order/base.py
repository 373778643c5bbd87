from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        self.sampler.reset()
        self.trace_hook(logits)
        self.legacy_hook(logits)
        self.sampler.apply(logits)
        self.finish(logits)
        return self.sampler(logits)
