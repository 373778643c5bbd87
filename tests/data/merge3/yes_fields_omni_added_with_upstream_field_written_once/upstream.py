logits: Tensor
stats: Stats
batch_desc: BatchDescriptor
scale: float
