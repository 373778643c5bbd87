(
    scheduler_output,
    logits,
    positions,
    extra_outputs,
    batch_desc,
) = self.state
