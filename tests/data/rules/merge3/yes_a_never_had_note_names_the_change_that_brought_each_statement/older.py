class NPUModelRunner:
    def forward(self, batch):
        ready = self.prepare(batch)
        tokens = self.count(batch)
        if self.grouped:
            group = self.group()
            tokens = group.share(tokens)
        return self.run(ready, tokens)
