from fakeacc.runner import GPUModelRunner
from fakeacc.timing import timed


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        if self.balancer:
            self.balancer.before()
        tokens = self.prepare(batch)
        hidden = self.run(tokens)
        if not self.dry_run:
            self.balancer.after()
        return hidden
