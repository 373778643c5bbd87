from vllm.utils import cdiv, round_up
