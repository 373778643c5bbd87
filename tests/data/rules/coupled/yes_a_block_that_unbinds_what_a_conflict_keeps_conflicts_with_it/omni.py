from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def step(self, batch):
        self.check(batch)
        tokens = self.tokens(batch)
        self.prepare(batch)
        deferred = self.deferred(batch)
        try:
            with self.omni_context(batch):
                out = self.forward(tokens, deferred)
        finally:
            self.release(batch)
        self.record(out)
        self.finish(batch)
        return out
