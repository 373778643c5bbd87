result = StepOutput(model_output=model_output, tokens=sampled.tokens, logprobs=sampled.logprobs, stream=self.stream)
