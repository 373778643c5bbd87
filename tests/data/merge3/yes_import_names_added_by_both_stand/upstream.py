from vllm.utils import cdiv, is_pin_memory_available, round_up
