# A tiny stand-in for vLLM-Omni's V2 AR runner, written for omni-port's tests.
from __future__ import annotations

from typing import Any

import torch

from vllm_omni.worker_v2.omni_model_runner import OmniGPUModelRunner


def _has_cuda_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.device.type == "cuda"
    return False


class OmniARModelRunner(OmniGPUModelRunner):
    """AR stage runner: hidden states and multimodal outputs per request."""

    def execute_model(
        self,
        scheduler_output: Any,
        intermediate_tensors: Any | None = None,
        dummy_run: bool = False,
    ) -> Any:
        if not dummy_run:
            self.kv_transfer.prepare(scheduler_output)
        return super().execute_model(scheduler_output, intermediate_tensors, dummy_run=dummy_run)

    @torch.inference_mode()
    def sample_tokens(self, grammar_output: Any | None) -> Any:
        input_batch, hidden = self.execute_model_state
        sampled = self.sampler(self.model.compute_logits(hidden), input_batch)
        outputs = self.omni_outputs.pop("multimodal", None)
        if _has_cuda_tensor(outputs):
            with torch.cuda.stream(self.main_stream):
                outputs = outputs.clone()
        self.postprocess_sampled(input_batch, sampled)
        return {"sampled": sampled, "multimodal": outputs}
