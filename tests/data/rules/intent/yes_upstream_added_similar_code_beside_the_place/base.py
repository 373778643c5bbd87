from fakeacc.groups import get_group, group, has_group
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        output = self.run(tokens)
        return output
