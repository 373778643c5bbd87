from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def dummy_run(self, num_tokens, force):
        if self.should_build(force):
            pad = self.mode == Mode.FULL
            metadata = self.build_metadata(num_tokens=num_tokens, pad=pad)
        return self.model(num_tokens)
