# Stand-ins of vLLM's V2 helpers, written for omni-port's tests.


def init_model_state(vllm_config, model, encoder_cache, device):
    from vllm.v1.worker.gpu.model_states.default import DefaultModelState

    return DefaultModelState(vllm_config, model, encoder_cache, device)
