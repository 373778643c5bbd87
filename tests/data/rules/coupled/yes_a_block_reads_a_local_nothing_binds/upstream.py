class NPUModelRunner:
    def sample(self, batch):
        tokens = self.draw(batch)
        self.finish(tokens)
        return tokens

    def execute(self, batch):
        start = self.begin(self.config.timing(), batch)
        self.forward(batch)
        return start
