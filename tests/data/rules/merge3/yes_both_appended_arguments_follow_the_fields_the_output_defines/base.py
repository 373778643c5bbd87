from typing import NamedTuple

from fakeacc.runner import GPUModelRunner


class State(NamedTuple):
    tokens: list
    positions: list
    metadata: dict
    hidden: object
    logits: object


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        positions = self.positions_of(tokens)
        metadata = self.metadata_of(batch)
        hidden = self.embed(tokens)
        logits = self.run(hidden)
        self.state = State(
            tokens,
            positions,
            metadata,
            hidden,
            logits,
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
        ) = self.state
        self.state = None
        output = self.pick(tokens, logits)
        self.record(positions, metadata)
        return output
