logits: Tensor
stats: Stats | None
batch_desc: BatchDescriptor
extra_outputs: Any  # omni
