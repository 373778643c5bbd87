from fakeacc.runner_v1 import NPUModelRunner
from fakeacc.timing import timed


class R(NPUModelRunner):
    def forward(self, batch):
        if self.balancer:
            with timed("balance before"):
                self.balancer.before()
        tokens = self.prepare(batch)
        hidden = self.run(tokens)
        if not self.dry_run:
            with timed("balance after"):
                self.balancer.after(self.omni_heat)
        return hidden
