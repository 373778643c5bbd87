from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute(self, batch):
        if not batch:
            return self.empty()
        # ---------- Omni-new ----------
        self.hand_off(batch)
        # ---------- Omni-new ----------
        tokens = self.prepare(batch)
        output = self.forward(tokens)
        return output
