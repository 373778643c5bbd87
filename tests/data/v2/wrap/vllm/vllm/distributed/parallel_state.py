# A tiny stand-in for vLLM's parallel state, written for omni-port's tests.
from contextlib import contextmanager


@contextmanager
def graph_capture(device):
    # vLLM asserts a CUDA or XPU communicator of each group here.
    yield device
