from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        group = self.group()
        self.barrier(group, timeout=self.timeout)
        if self.has_transfer():
            assert batch.meta is not None
            self.transfer(batch.meta)
        output = self.run(tokens)
        return output
