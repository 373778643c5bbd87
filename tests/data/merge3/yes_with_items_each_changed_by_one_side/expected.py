with (
    record("forward"),
    forward_context(metadata, config, num_tokens=padded, executor=executor, sinks=self.sinks),
    self.connector_output(scheduler_output, defer=True) as output,
):
    hidden = self.model(input_ids)
