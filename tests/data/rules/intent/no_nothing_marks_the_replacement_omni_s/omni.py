from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        output = self.run_stages(tokens, batch.stages)
        self.record(output)
        return output
