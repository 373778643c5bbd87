result = StepOutput(
    model_output=output,
    tokens=torch.tensor([]),
    stream=self.stream,
    logprobs=None,  # omni: no sampling
)
