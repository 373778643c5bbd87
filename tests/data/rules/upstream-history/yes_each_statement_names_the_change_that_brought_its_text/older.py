from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if self.pp:
            group = self.pp_group()
            self.send(tokens, group)
        return self.run(tokens)
