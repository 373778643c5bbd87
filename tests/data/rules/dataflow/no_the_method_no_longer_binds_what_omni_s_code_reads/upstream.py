class NPUModelRunner:
    def sample(self, batch):
        tokens = self.draw(batch)
        self.finish(tokens)
        return tokens
