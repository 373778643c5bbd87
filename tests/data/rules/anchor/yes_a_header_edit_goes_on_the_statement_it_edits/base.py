from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        metadata = self.prepare(batch)
        defer = self.config.defer and self.is_last_rank
        with record("forward"), forward_context(metadata, self.config, num_tokens=batch.size, input_ids=batch.ids):
            hidden = self.model(batch)
        if self.deferred:
            self.apply_deferred()
        with record("post process"):
            output = self.post(hidden)
        return output
