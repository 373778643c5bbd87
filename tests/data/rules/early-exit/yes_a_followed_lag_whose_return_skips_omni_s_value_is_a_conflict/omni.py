from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute(self, batch):
        # ---------- Omni-new ----------
        if not batch:
            return self.with_handoff(self.empty())
        # ---------- Omni-new ----------
        tokens = self.prepare(batch)
        output = self.forward(tokens)
        return self.with_handoff(output)  # [Omni]
