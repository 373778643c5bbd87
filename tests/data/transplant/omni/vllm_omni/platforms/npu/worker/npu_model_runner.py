"""Synthetic omni NPU runner (written for omni-port's tests): carries one GPU hunk, lacks two."""

from fakeacc.context import set_ascend_forward_context
from fakeacc.worker.model_runner_v1 import NPUModelRunner
from fakevllm.outputs import EMPTY_MODEL_RUNNER_OUTPUT

from vllm_omni.worker.gpu_model_runner import OmniGPUModelRunner


class OmniNPUModelRunner(OmniGPUModelRunner, NPUModelRunner):
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        self._update_states(scheduler_output)
        if not scheduler_output.total_num_scheduled_tokens:
            return EMPTY_MODEL_RUNNER_OUTPUT
        inputs = self._prepare_inputs(scheduler_output)
        model_kwargs = self._build_model_kwargs_extra()
        with set_ascend_forward_context(self.attn_metadata, self.vllm_config):
            model_output = self._model_forward(
                input_ids=inputs.input_ids,
                positions=inputs.positions,
                **model_kwargs,
            )
        # ------------------------------ Omni-new ------------------------------
        if self.enable_acl_graph_padding:
            model_output = self._unpad_acl_graph(model_output)
        # ------------------------------ Omni-new ------------------------------
        logits = self.model.compute_logits(model_output)
        self.execute_model_state = (logits, inputs)
        return None
