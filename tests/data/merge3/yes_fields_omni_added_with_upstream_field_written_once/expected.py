logits: Tensor
stats: Stats
extra_outputs: Any  # omni
batch_desc: BatchDescriptor
scale: float
