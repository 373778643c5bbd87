from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        lists = None
        output = self.run(tokens)
        # ---------- Omni-new ----------
        output.lists = lists
        # ---------- Omni-new ----------
        return output
