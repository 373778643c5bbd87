from fakeacc.runner_v1 import NPUModelRunner
from fakeacc.timing import timed


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if self.balancer:
            with timed("balance before"):
                self.balancer.before()
        return self.run(tokens)

    def sample(self, hidden):
        logits = self.logits(hidden)
        if self.balancer:
            with timed("balance after"):
                self.balancer.after(self.omni_heat)
        return self.pick(logits)
