from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        if self.has_transfer():
            meta = batch.meta
            if meta is not None:
                self.transfer(meta)
        # ---------- Omni-new ----------
        output = self.run(tokens)
        return output
