class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        group = self.group()
        if group.size > 1:
            batch = group.split(batch)
        if self.transfer:
            self.transfer.flush(batch)
        tokens = self.count(batch)
        return self.run(ready, tokens)
