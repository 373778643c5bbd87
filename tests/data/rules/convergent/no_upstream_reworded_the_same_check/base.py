import time

from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        output = self.run(batch)

        if self.eplb:
            self.eplb.step()
        return output
