class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        tokens = self.count(batch)
        return self.run(ready, tokens)
