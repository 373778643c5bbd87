from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        metadata = self.prepare(batch)
        defer = self.config.defer and self.is_last_rank
        with record("forward"), forward_context(metadata, self.config, num_tokens=batch.size, sinks=self.sinks):
            hidden = self.model(batch)
        if self.deferred:
            self.apply_deferred()
        with record("post process"):
            output = self.post(hidden)
        return output
