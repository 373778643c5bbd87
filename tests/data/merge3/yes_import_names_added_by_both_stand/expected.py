from vllm.utils import cdiv, is_pin_memory_available, omni_helper, round_up
