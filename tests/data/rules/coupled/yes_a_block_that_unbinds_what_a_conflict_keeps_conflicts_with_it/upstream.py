class NPUModelRunner:
    def step(self, batch):
        self.check(batch)
        tokens = self.tokens(batch)
        count = len(batch.items)
        mode = self.config.encoder and count > 0
        deferred = self.deferred(batch)
        padding = self.padding(batch)
        with self.context(batch, mode=mode, padding=padding):
            out = self.forward(tokens, deferred)
        self.record(out)
        self.finish(batch)
        return out
