class NPUModelRunner:
    def execute(self, batch):
        if not batch:
            return self.empty()
        tokens = self.prepare(batch)
        if self.paused:
            return self.pending(tokens)
        output = self.forward(tokens)
        return output
