(
    scheduler_output,
    logits,
    positions,
    extra_outputs,
) = self.state
