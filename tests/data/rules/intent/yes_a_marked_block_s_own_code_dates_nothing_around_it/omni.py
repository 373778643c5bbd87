from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        ready = self.prepare(batch)
        self.mark(batch)
        # ---------- Omni-new ----------
        if self.hooks:
            if batch is not None:
                self.hooks.before(batch)
        # ---------- Omni-new ----------
        total = self.total(batch)
        return self.run(ready, total)
