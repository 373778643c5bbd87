from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, logits, k=1):
        self.prepare_sampler()
        # ---------- Omni-new ----------
        logits = self.omni_scale(logits)
        # ---------- Omni-new ----------
        self.sampler.reset()
        return self.sampler(logits, k)

    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        self.record_omni_stats(tokens)
        # ---------- Omni-new ----------
        self.run(tokens)
        return self.result
