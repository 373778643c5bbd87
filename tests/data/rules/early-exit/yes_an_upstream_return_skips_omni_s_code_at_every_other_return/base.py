class NPUModelRunner:
    def execute(self, batch):
        if not batch:
            return self.empty()
        tokens = self.prepare(batch)
        output = self.forward(tokens)
        return output
