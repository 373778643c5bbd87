class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        self.mark(batch)
        group = self.group()
        if group.size > 1 and not group.last:
            batch = group.split(batch, keep=True)
        total = self.total(batch) * 2
        return self.run(ready, total)
