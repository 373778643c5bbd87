class NPUModelRunner:
    def execute(self, batch):
        if not batch:
            return self.empty()

        def first(tokens):
            return tokens[0]

        tokens = self.prepare(batch, first)
        output = self.forward(tokens)
        return output
