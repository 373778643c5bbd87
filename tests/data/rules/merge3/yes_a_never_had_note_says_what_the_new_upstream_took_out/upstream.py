class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        if self.transfer:
            self.transfer.flush(batch, wait=True)
        tokens = self.count(batch)
        return self.run(ready, tokens)
