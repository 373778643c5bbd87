# A tiny stand-in for vLLM-Omni's V2 GPU runner, which replaces vLLM's bodies; written for
# omni-port's tests.
from __future__ import annotations

import threading
from typing import Any

import torch
from vllm.v1.worker.gpu.dp_utils import dispatch_cg_and_sync_dp
from vllm.v1.worker.gpu.model_runner import GPUModelRunner

from vllm_omni.outputs import make_omni_output
from vllm_omni.worker_v2.model_states import init_omni_model_state
from vllm_omni.worker_v2.model_states.omni_model_state import OmniModelState

_model_state_lock = threading.RLock()


class OmniGPUModelRunner(GPUModelRunner):
    """Omni hooks on Model Runner V2."""

    model_state: OmniModelState

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.omni_outputs: dict[str, Any] = {}

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        import vllm.v1.worker.gpu.model_runner as _mr_module

        with _model_state_lock:
            original = _mr_module.init_model_state
            _mr_module.init_model_state = init_omni_model_state
            try:
                super().load_model(*args, **kwargs)
            finally:
                _mr_module.init_model_state = original

    # ------------------------------------------------------------------
    # execute_model: omni's forward (OmniOutput), vLLM's body replaced
    # ------------------------------------------------------------------

    @torch.inference_mode()
    def execute_model(
        self,
        scheduler_output: Any,
        intermediate_tensors: Any | None = None,
        dummy_run: bool = False,
    ) -> Any:
        batch_desc = dispatch_cg_and_sync_dp(self.cudagraph_manager, scheduler_output.num_reqs)
        if dummy_run:
            from vllm.v1.worker.gpu.input_batch import InputBatch

            input_batch = InputBatch.make_dummy(batch_desc)
        else:
            input_batch = self.prepare_inputs(scheduler_output, batch_desc)
        output = make_omni_output(self.model(input_batch))
        self.omni_outputs["multimodal"] = output.multimodal_outputs
        self.execute_model_state = (input_batch, output.text_hidden_states)
        return None
