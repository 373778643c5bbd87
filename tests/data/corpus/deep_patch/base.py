class NPUModelRunner:
    def execute_model(self, batch):
        self.prepare(batch)
        output = self.model(batch)
        if output is None:
            return None
        return output

    def sample_tokens(self, logits):
        tokens = self.sampler(logits)
        return tokens
