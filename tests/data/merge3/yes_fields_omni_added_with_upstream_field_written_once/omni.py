logits: Tensor
stats: Stats | None
extra_outputs: Any  # omni
batch_desc: BatchDescriptor
scale: float
