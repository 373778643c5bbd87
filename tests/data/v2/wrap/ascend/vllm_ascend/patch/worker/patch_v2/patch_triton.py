# A V2 patch installed only where Triton is, written for omni-port's tests.
from vllm.v1.worker.gpu import dp_utils

from vllm_ascend.worker.v2.utils import skip_dp_coordination

dp_utils.skip_dp_coordination = skip_dp_coordination
