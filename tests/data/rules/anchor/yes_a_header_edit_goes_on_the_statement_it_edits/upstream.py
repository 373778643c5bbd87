from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        metadata = self.prepare(batch)
        executor = self.prepare_executor(metadata)
        with record("forward"), forward_context(metadata, self.config, num_tokens=batch.size, executor=executor, input_ids=batch.ids):
            hidden = self.model(batch)
        defer = self.config.defer and self.is_last_rank
        with record("post process"):
            output = self.post(hidden)
        if self.deferred:
            self.apply_deferred()
        return output
