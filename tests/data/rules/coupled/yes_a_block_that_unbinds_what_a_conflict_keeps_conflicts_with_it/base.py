class NPUModelRunner:
    def step(self, batch):
        self.check(batch)
        tokens = self.tokens(batch)
        count = len(batch.items)
        mode = self.config.encoder and count > 0
        deferred = self.deferred(batch)
        with self.context(batch, mode=mode):
            out = self.forward(tokens, deferred)
        self.record(out)
        self.finish(batch)
        return out
