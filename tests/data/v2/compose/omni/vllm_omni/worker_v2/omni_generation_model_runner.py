# A tiny stand-in for vLLM-Omni's V2 generation runner, written for omni-port's tests.
import torch

from vllm_omni.worker_v2.omni_model_runner import OmniGPUModelRunner


class OmniGenerationModelRunner(OmniGPUModelRunner):
    """Non-autoregressive runner (a vocoder, say)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outputs = None

    def profile_run(self):
        """Generation models have no KV cache: skip profiling."""
        torch.accelerator.synchronize()

    def execute_model(self, scheduler_output):
        codes = scheduler_output.codes
        self.outputs = self.model.decode(codes)
        return None

    def sample_tokens(self, grammar_output=None):
        output = super().sample_tokens(grammar_output)
        self.outputs = None
        return output
