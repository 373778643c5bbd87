class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        self.mark(batch)
        group = self.group()
        if group.size > 1 and not group.last:
            batch = group.split(batch, keep=True)
        if self.hooks:
            assert batch, "an empty batch"
            self.hooks.before(batch)
        total = self.total(batch)
        return self.run(ready, total)
