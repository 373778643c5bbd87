"""The GPU runners: their omni delta against vLLM, parity with the NPU runners, transplants."""
