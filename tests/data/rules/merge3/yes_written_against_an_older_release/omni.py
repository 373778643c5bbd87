from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        logits = self.compute(batch)
        self.state = State(
            batch,
            logits,
            extra=extra_outputs,  # omni
        )
        return None
