from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        group = self.pp_group()
        self.warm(group)
        if self.pp:
            self.send(tokens, group)
        return self.run(tokens)
