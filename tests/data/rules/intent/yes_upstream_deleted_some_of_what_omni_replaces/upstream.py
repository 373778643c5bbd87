from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        group = self.group()
        if group.size > 1:
            parts = self.partition(group)
            batch = self.split(batch, parts)
        if self.has_transfer():
            assert batch.meta is not None
            self.transfer(batch.meta)
        output = self.run(tokens)
        return output
