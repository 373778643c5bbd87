from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        group = self.group()
        chunked = self.config.chunked and group.size > 1
        self.check(tokens, chunked)
        hidden = self.model(tokens, chunked=chunked)
        return self.run(hidden)
