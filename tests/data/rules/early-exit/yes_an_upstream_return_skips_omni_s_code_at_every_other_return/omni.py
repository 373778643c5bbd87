from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute(self, batch):
        if not batch:
            # ---------- Omni-new ----------
            self.hand_off(batch)
            # ---------- Omni-new ----------
            return self.empty()
        tokens = self.prepare(batch)
        output = self.forward(tokens)
        # ---------- Omni-new ----------
        self.hand_off(batch)
        # ---------- Omni-new ----------
        return output
