class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        self.mark(batch)
        group = self.group()
        if group.size > 1:
            batch = group.split(batch)
        total = self.total(batch)
        return self.run(ready, total)
