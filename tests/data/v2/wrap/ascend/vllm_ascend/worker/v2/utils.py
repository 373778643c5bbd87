# Stand-ins of vllm-ascend's V2 helpers, written for omni-port's tests.
from contextlib import contextmanager, nullcontext

import torch


@contextmanager
def torch_cuda_wrapper():
    try:
        torch.cuda.Event = torch.npu.Event
        torch.cuda.Stream = torch.npu.Stream
        torch.cuda.stream = torch.npu.stream
        torch.cuda.current_stream = torch.npu.current_stream
        yield
    finally:
        pass


@contextmanager
def communicator_switch():
    import vllm.distributed.device_communicators.cuda_communicator as cuda

    from vllm_ascend.distributed import NPUCommunicator

    saved = cuda.CudaCommunicator
    cuda.CudaCommunicator = NPUCommunicator
    try:
        yield
    finally:
        cuda.CudaCommunicator = saved


def skip_dp_coordination():
    return nullcontext()
