(
    scheduler_output,
    logits,
    draft_metadata,
    positions,
    batch_desc,
    extra_outputs,
) = self.state
