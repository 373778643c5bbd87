# A V2 patch of vLLM's runner module globals, written for omni-port's tests.
from vllm.v1.worker.gpu import cudagraph_utils, model_runner

from vllm_ascend.worker.v2.input_batch import AscendInputBatch

cudagraph_utils.InputBatch = AscendInputBatch
model_runner.InputBatch = AscendInputBatch
