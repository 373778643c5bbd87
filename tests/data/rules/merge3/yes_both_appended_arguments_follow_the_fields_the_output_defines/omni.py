from typing import Any, NamedTuple

from fakeacc.runner_v1 import NPUModelRunner


class State(NamedTuple):
    tokens: list
    positions: list
    metadata: dict
    hidden: object
    logits: Any
    extras: Any


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        positions = self.positions_of(tokens)
        metadata = self.metadata_of(batch)
        hidden = self.embed(tokens)
        logits = self.run(hidden)
        extras = self.gather(batch)
        self.state = State(
            tokens,
            positions,
            metadata,
            hidden,
            logits,
            extras,
        )
        return None

    def sample(self):
        if self.state is None:
            return None
        (
            tokens,
            positions,
            metadata,
            hidden,
            logits,
            extras,
        ) = self.state
        self.state = None
        output = self.pick(tokens, logits)
        self.record(positions, metadata)
        return output
