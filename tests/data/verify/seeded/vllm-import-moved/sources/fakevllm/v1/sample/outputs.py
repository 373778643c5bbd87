from dataclasses import dataclass


@dataclass
class SamplerOutput:
    sampled_token_ids: list
    logprobs_tensors: object | None
