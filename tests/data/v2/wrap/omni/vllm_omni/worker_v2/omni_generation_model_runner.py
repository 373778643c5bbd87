# A tiny stand-in for vLLM-Omni's V2 generation runner (a vocoder), written for omni-port's
# tests.
from __future__ import annotations

from typing import Any

import torch
from vllm.v1.worker.gpu.block_table import BlockTables

from vllm_omni.worker_v2.omni_model_runner import OmniGPUModelRunner


def _contains_cuda_tensor(value: Any) -> bool:
    """Whether a payload still owns accelerator storage."""
    if isinstance(value, torch.Tensor):
        return value.is_cuda
    return False


class OmniGenerationAsyncOutput:
    """Overlap the device-to-host copy with the next step."""

    def __init__(self, outputs: Any, copy_stream: Any) -> None:
        self.copy_event = torch.cuda.Event(blocking=True)
        with torch.cuda.stream(copy_stream):
            self.outputs = outputs.to("cpu", non_blocking=True)
            self.copy_event.record(copy_stream)

    def get_output(self) -> Any:
        self.copy_event.synchronize()
        return self.outputs


class OmniGenerationModelRunner(OmniGPUModelRunner):
    """Non-autoregressive runner (a vocoder, say)."""

    @torch.inference_mode()
    def profile_run(self) -> None:
        """Generation models have no KV cache: skip profiling."""
        torch.accelerator.synchronize()

    @torch.inference_mode()
    def execute_model(
        self,
        scheduler_output: Any,
        intermediate_tensors: Any | None = None,
        dummy_run: bool = False,
    ) -> Any:
        tables = BlockTables(len(scheduler_output.codes))
        self.omni_outputs["codes"] = self.model.decode(scheduler_output.codes, tables)
        return None

    @torch.inference_mode()
    def sample_tokens(self, grammar_output: Any | None = None) -> Any:
        outputs = self.omni_outputs.pop("codes", None)
        can_copy_async = getattr(getattr(self, "device", None), "type", "cpu") == "cuda" and (
            _contains_cuda_tensor(outputs)
        )
        if can_copy_async:
            return OmniGenerationAsyncOutput(outputs, self.output_copy_stream)
        return outputs
