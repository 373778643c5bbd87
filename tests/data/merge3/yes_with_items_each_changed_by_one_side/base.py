with (
    record("forward"),
    forward_context(metadata, config, num_tokens=padded, input_ids=input_ids, sinks=self.sinks),
    self.connector_output(scheduler_output) as output,
):
    hidden = self.model(input_ids)
