from typing import NamedTuple

from fakeacc.runner_v1 import NPUModelRunner


class State(NamedTuple):
    tokens: list
    logits: object | None  # omni


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        logits = self.run(tokens)
        self.state = State(tokens, logits.float())
        return None
