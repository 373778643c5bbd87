try:
    logits = self.model.compute_logits(hidden, metadata=self.metadata)
except TypeError:
    logits = self.model.compute_logits(hidden)
