# Stand-ins of vllm-ascend's helpers, written for omni-port's tests.


def has_kv_transfer_group():
    return False


def get_kv_transfer_group():
    return None


class NPUCommunicator:
    """The NPU's device communicator."""
