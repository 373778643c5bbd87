# A V2 patch of vLLM's runner module globals, written for omni-port's tests.
from vllm.v1.worker.gpu import model_runner

from vllm_ascend.worker.v2.model_states import init_ascend_model_state

# The NPU needs its own model state (its attention metadata differs).
model_runner.init_model_state = init_ascend_model_state
