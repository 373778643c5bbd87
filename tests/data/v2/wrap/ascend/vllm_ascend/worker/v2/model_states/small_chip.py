# A chip-specific model state of the tiny vllm-ascend stand-in, written for omni-port's tests.
from vllm_ascend.worker.v2.model_states.default import AscendModelState


class SmallChipModelState(AscendModelState):
    pass
