from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = batch.tokens
        self.a = 1
        self.b = 2
        self.c = 3
        self.d = 4
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.log_tokens(tokens)
        # ---------- Omni-new ----------
        self.run(batch)
        return self.result

    def sample(self, logits):
        self.prepare_sampler()
        # ---------- Omni-new ----------
        self.apply_omni_penalties(logits)
        # ---------- Omni-new ----------
        self.sampler.reset()
        return self.sampler(logits)
