class NPUModelRunner:
    def step(self, batch):
        self.check(batch)
        tokens = self.tokens(batch)
        mode = self.config.mode(batch)
        out = self.forward(tokens)
        self.record(out, mode)
        self.finish(batch)
        return out
