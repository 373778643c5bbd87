from fakeacc.dist import get_group
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        batch.validate()
        tokens = self.prepare(batch)
        self.stats.update(batch)
        self.check(tokens, get_group())
        self.count(tokens)
        self.flush()
        return self.run(tokens, get_group())
