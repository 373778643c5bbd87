from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        ready = self.prepare(batch)
        # ---------- Omni-new ----------
        if self.transfer:
            self.transfer.flush(batch, stages=batch.stages)
        # ---------- Omni-new ----------
        tokens = self.count(batch)
        return self.run(ready, tokens)
