class NPUModelRunner:
    def sample_tokens(self, logits):
        tokens = self.sampler(logits)
        return tokens
