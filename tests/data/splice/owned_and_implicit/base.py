from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def load_model(self):
        self.model = self.loader.load(self.config)
        self.sampler = self.loader.sampler(self.config)
        self.warm_up()

    def sample_tokens(self, grammar_output):
        output = self.kv_output
        self.kv_output = None
        if self.state is None:
            return None
        scheduler_output, logits = self.state
        self.state = None
        sampled = self.sampler(logits)
        return self.make_output(sampled, output)
