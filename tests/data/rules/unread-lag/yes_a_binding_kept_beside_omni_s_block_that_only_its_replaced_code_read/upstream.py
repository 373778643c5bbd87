class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        self.mark(batch)
        scale = self.scale_of(batch)
        total = self.total(batch, scale) * 2
        return self.run(ready, total)
