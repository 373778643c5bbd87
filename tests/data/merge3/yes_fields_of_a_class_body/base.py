logits: Tensor
stats: Stats | None
