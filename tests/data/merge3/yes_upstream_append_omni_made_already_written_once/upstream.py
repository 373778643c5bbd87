self.state = StepState(scheduler_output, logits, positions, stats, slot_map)
