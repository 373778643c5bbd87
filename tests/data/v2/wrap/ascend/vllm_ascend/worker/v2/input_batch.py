# Stand-ins of vllm-ascend's V2 helpers, written for omni-port's tests.
from vllm.v1.worker.gpu.input_batch import InputBatch


class AscendInputBatch(InputBatch):
    seq_lens_cpu = None
