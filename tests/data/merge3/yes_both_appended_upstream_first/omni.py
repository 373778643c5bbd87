self.state = StepState(
    scheduler_output,
    logits,
    positions,
    stats,
    extra_outputs,  # omni
)
