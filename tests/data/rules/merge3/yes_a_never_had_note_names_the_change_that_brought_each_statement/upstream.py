class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        group = self.group()
        if group.size > 1 and not group.last:
            batch = group.split(batch, keep=True)
        if self.transfer:
            self.transfer.flush(batch, wait=True)
        tokens = self.count(batch)
        return self.run(ready, tokens)
