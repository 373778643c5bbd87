logits = self.model.compute_logits(hidden.contiguous())
