class NPUModelRunner:
    def sample(self, batch):
        timing = self.config.timing()
        tokens = self.draw(batch)
        if timing.enabled:
            self.record(tokens)
        return tokens
