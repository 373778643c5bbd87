# The omni model state of the tiny vLLM-Omni stand-in, written for omni-port's tests.
from __future__ import annotations

from typing import Any

import torch
from vllm.v1.worker.gpu.input_batch import InputBatch
from vllm.v1.worker.gpu.model_states.default import DefaultModelState


class OmniModelState(DefaultModelState):
    """Cross-stage buffers on vLLM's model state."""

    def __init__(self, vllm_config: Any, model: Any, encoder_cache: Any, device: Any) -> None:
        super().__init__(vllm_config, model, encoder_cache, device)
        self.buffers: dict[str, Any] = {}

    def remove_request(self, req_id: str) -> None:
        self.buffers.pop(req_id, None)

    def prepare_inputs(self, input_batch: InputBatch, req_states: Any) -> dict[str, Any]:
        inputs = super().prepare_inputs(input_batch, req_states)
        inputs["buffers"] = [self.buffers.get(r) for r in input_batch.req_ids]
        return inputs

    def capture_extra_graphs(self, sizes: list[int]) -> None:
        """Graphs of omni's own (captured after the runner's, as omni's MTP graphs are)."""
        from vllm.distributed.parallel_state import graph_capture

        try:
            # One stream for every size.
            with torch.inference_mode(), graph_capture(device=self.device):
                for size in sizes:
                    self.buffers[str(size)] = size
        except RuntimeError as e:
            raise RuntimeError(f"capture failed: {e}") from e
