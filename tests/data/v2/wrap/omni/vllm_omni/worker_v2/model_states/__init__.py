# The omni model-state factory of the tiny vLLM-Omni stand-in, written for omni-port's tests.
from __future__ import annotations

import torch
from vllm.v1.worker.gpu.model_states import (
    init_model_state as _upstream_init_model_state,
)


def init_omni_model_state(vllm_config, model, encoder_cache, device: torch.device):
    """Omni's model state for omni models; vLLM's factory for the rest."""
    if getattr(model, "has_preprocess", False):
        from vllm_omni.worker_v2.model_states.omni_model_state import OmniModelState

        return OmniModelState(vllm_config, model, encoder_cache, device)
    return _upstream_init_model_state(vllm_config, model, encoder_cache, device)
