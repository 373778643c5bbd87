# Stand-ins of vllm-ascend's helpers, written for omni-port's tests.
HAS_TRITON = False
SMALL_CHIP = False
