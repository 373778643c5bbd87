class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        self.warm(batch)
        total = self.total(batch)
        return self.run(ready, total)
