# Which V2 patches a worker installs, written for omni-port's tests.
from vllm_ascend.utils import HAS_TRITON

if HAS_TRITON:
    import vllm_ascend.patch.worker.patch_v2.patch_triton  # noqa: F401

import vllm_ascend.patch.worker.patch_v2.patch_block_table  # noqa: F401
import vllm_ascend.patch.worker.patch_v2.patch_input_batch  # noqa: F401
import vllm_ascend.patch.worker.patch_v2.patch_model_runner  # noqa: F401
import vllm_ascend.patch.worker.patch_v2.patch_model_state  # noqa: F401
