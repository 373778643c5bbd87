from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if self.pp:
            self.send(tokens, group)
        return self.run(tokens)
