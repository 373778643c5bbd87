from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if self.use_async and batch.drafts is None:
            batch = batch.copy()
        group = self.group()
        if group.size > 1:
            batch = self.split(batch, group)
        if self.has_transfer():
            self.transfer(batch.meta)
        output = self.run(tokens)
        return output
