from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def step(self, batch):
        self.check(batch)
        tokens = self.tokens(batch)
        out = self.forward(tokens)
        self.record(out)
        self.finish(batch)
        return out
