logits: Tensor
stats: Stats | None
extra_outputs: Any  # omni
