logits: Tensor
stats: Stats | None
batch_desc: BatchDescriptor
