from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        # ---------- Omni-new ----------
        self.apply_omni_penalties(logits)
        # ---------- Omni-new ----------
        self.sampler.reset()
        self.trace_hook(logits)
        self.legacy_hook(logits)
        self.sampler.apply(logits)
        # ---------- Omni-new ----------
        self.record_sampling(logits)
        # ---------- Omni-new ----------
        self.finish(logits)
        return self.sampler(logits)
