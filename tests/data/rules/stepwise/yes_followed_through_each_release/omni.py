from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        with profile_duration("post process"):
            # ---------- Omni-new ----------
            self.stats.record(batch)
            # ---------- Omni-new ----------
            scale = self.config.scale
            logits = self.head(tokens) * scale
            probs = logits.softmax(-1)
        return probs
