self.state = StepState(scheduler_output, logits, positions, stats)
