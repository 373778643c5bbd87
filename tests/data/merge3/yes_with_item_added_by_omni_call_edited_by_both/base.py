with forward_context(
    metadata,
    self.config,
    num_tokens=padded,
    num_tokens_across_dp=across_dp,
    in_profile_run=is_profile,
    input_ids=input_ids,
    sinks=self.sinks,
):
    hidden = self.model(input_ids)
