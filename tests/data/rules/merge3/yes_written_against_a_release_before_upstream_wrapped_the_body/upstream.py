from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def dummy_run(self, num_tokens, force):
        with self.synchronize_inputs():
            if self.should_build(force):
                pad = self.mode == Mode.FULL
                if self.use_compress:
                    self.positions.fill_(127)
                    self.compress_positions.fill_(127)
                metadata = self.build_metadata(num_tokens=num_tokens, pad=pad, offload=False)
        return self.model(num_tokens)
