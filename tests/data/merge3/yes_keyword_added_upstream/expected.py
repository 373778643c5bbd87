result = StepOutput(
    model_output=output,
    tokens=torch.tensor([]),
    stream=self.stream,
    experts=experts_snapshot,
    logprobs=None,  # omni: no sampling
)
