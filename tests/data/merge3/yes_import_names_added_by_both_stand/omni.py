from vllm.utils import cdiv, omni_helper, round_up
