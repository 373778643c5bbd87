# The version of the tiny vLLM-Omni stand-in, written for omni-port's tests.
__version__ = "0.30.0"
