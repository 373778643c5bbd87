with (
    self.randomized(input_ids, enabled=randomize),
    forward_context(
        metadata,
        self.config,
        num_tokens=padded,
        num_tokens_across_dp=across_dp,
        in_profile_run=is_profile,
        sinks=self.sinks,
    ),
):
    hidden = self.model(input_ids)
