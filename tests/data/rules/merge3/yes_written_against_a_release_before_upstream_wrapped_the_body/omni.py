from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def dummy_run(self, num_tokens, force):
        with self.synchronize_inputs():
            if self.should_build(force):
                pad = self.mode == Mode.FULL
                metadata = self.build_metadata(num_tokens=num_tokens, pad=pad, batch=self.batch)
        return self.model(num_tokens)
