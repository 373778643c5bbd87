"""Model Runner V2 on NPU: vLLM-Omni's worker_v2 runners composed with vllm-ascend's V2 runner."""
