from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def load_model(self):
        self.model = self.loader.load(self.config)
        self.sampler = self.loader.sampler(self.config)
        self.drafter = self.loader.drafter(self.config)
        self.warm_up()

    def sample_tokens(self, grammar_output):
        output = self.kv_output
        self.kv_output = None
        if self.state is None:
            return None
        scheduler_output, logits = self.state
        self.state = None
        if grammar_output is not None:
            logits = self.apply_grammar(grammar_output, logits)
        sampled = self.sampler(logits)
        return self.make_output(sampled, output)
