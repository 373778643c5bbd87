from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        self.state = State(
            tokens,
            logits,
            extra=extra,  # omni
        )
        # ---------- Omni-new ----------
        self.step(tokens)
        return None
