from dataclasses import dataclass


@dataclass
class ModelRunnerOutput:
    req_ids: list
    sampled_token_ids: list
    pooler_output: list | None = None
