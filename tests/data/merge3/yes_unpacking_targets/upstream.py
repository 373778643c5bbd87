(scheduler_output, logits, draft_metadata, positions, batch_desc) = self.state
