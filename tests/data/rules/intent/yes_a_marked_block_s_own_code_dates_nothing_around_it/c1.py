class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        total = self.total(batch)
        return self.run(ready, total)
