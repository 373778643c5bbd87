(scheduler_output, logits, positions) = self.state
