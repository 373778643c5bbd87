(
    scheduler_output,
    logits,
    draft_metadata,
    positions,
    extra_outputs,
    batch_desc,
) = self.state
