# A tiny stand-in for vllm-ascend's V2 NPUModelRunner, which wraps super(); written for
# omni-port's tests.
from contextlib import nullcontext

import torch
from vllm.v1.worker.gpu.model_runner import GPUModelRunner

from vllm_ascend.distributed import get_kv_transfer_group, has_kv_transfer_group
from vllm_ascend.worker.v2.utils import skip_dp_coordination, torch_cuda_wrapper


class NPUModelRunner(GPUModelRunner):
    """Model runner for NPUs."""

    def __init__(self, vllm_config, device):
        with torch_cuda_wrapper():
            super().__init__(vllm_config, device)
        self.skip_dp = False
        self.kvpp = vllm_config.kvpp

    def load_model(self, *args, **kwargs):
        aux_layers = self.vllm_config.aux_layers
        super().load_model(*args, **kwargs)
        self.aux_layers = aux_layers

    def profile_run(self):
        """Reserve the communication buffer before the standard profiling."""
        self._dummy_run(self.mc2_capacity)
        super().profile_run()

    @torch.inference_mode()
    def execute_model(self, scheduler_output, intermediate_tensors=None, dummy_run=False):
        # Preemption stores must complete before the parent reuses their blocks.
        if has_kv_transfer_group():
            get_kv_transfer_group().handle_preemptions(scheduler_output.kv_metadata)
        context = skip_dp_coordination() if self.skip_dp else nullcontext()
        with context:
            output = super().execute_model(
                scheduler_output,
                intermediate_tensors=intermediate_tensors,
                dummy_run=dummy_run,
            )
        if dummy_run and self.lmhead_tp:
            # The LM-head ranks join the dummy step with a logits computation of their own.
            self.model.compute_logits(self.execute_model_state[1])
        self.kvpp.complete_forward()
        return output

    def sample_tokens(self, grammar_output):
        self._restore_draft_states()
        output = super().sample_tokens(grammar_output)
        self.broadcast_drafts()
        return output

    def _restore_draft_states(self):
        self.execute_model_state = self.execute_model_state

    def broadcast_drafts(self):
        return None

    def postprocess_sampled(self, input_batch, sampled):
        super().postprocess_sampled(input_batch, sampled)
        self.copy_computed_tokens_to_cpu()

    def copy_computed_tokens_to_cpu(self):
        return None
