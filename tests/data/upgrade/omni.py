from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        # ---------- Omni-new ----------
        self.apply_omni_penalties(logits)
        # ---------- Omni-new ----------
        self.sampler.reset()
        return self.sampler(logits)

    def forward(self, batch):
        self.prepare(batch)
        self.run(batch)
        self.record_omni_stats(batch)
        return self.result
