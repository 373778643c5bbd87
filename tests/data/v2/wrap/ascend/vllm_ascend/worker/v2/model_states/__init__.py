# The model-state factory of the tiny vllm-ascend stand-in, written for omni-port's tests.
from vllm_ascend.utils import SMALL_CHIP


def init_ascend_model_state(vllm_config, model, encoder_cache, device):
    # A small chip has a state of its own, built on the NPU's.
    if SMALL_CHIP:
        from vllm_ascend.worker.v2.model_states.small_chip import SmallChipModelState

        return SmallChipModelState(vllm_config, model, encoder_cache, device)

    from vllm_ascend.worker.v2.model_states.default import AscendModelState

    return AscendModelState(vllm_config, model, encoder_cache, device)
