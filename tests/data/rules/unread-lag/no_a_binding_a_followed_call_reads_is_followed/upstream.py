from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        group = self.group()
        chunked = self.config.chunked and group.size > 1
        self.report(chunked)
        self.check(tokens)
        hidden = self.model(tokens)
        return self.run(hidden)
