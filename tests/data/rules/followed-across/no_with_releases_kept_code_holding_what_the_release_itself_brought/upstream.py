from fakeacc.runner import GPUModelRunner
from fakeacc.timing import timed


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if self.balancer:
            self.balancer.before()
        return self.run(tokens, mode=1)

    def sample(self, hidden):
        logits = self.logits(hidden)
        if self.balancer:
            self.balancer.after(self.heat)
        return self.pick(logits)
