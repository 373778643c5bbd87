# A V2 patch of vLLM's runner module globals, written for omni-port's tests.
from vllm.v1.worker.gpu import model_runner

from vllm_ascend.worker.v2.input_batch import AscendInputBatch

model_runner.InputBatch = AscendInputBatch
