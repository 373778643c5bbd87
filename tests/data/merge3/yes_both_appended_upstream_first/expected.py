self.state = StepState(
    scheduler_output,
    logits,
    positions,
    stats,
    batch_desc,
    extra_outputs,  # omni
)
