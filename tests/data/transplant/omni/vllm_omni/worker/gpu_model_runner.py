"""Synthetic omni GPU runner (written for omni-port's tests): hunks the NPU side lacks or has."""

from fakevllm.context import set_forward_context
from fakevllm.outputs import EMPTY_MODEL_RUNNER_OUTPUT
from fakevllm.worker.gpu_model_runner import GPUModelRunner


class OmniGPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        self._update_states(scheduler_output)
        self.stage_state.refresh(scheduler_output.stage_requests)
        if self.use_async_scheduling:
            self._sync_async_state(scheduler_output)
            self.async_barrier.wait(scheduler_output.stage_requests)
        if not scheduler_output.total_num_scheduled_tokens:
            return EMPTY_MODEL_RUNNER_OUTPUT
        inputs = self._prepare_inputs(scheduler_output)
        model_kwargs = self._build_model_kwargs_extra()
        with set_forward_context(self.attn_metadata, self.vllm_config):
            model_output = self._model_forward(
                input_ids=inputs.input_ids,
                positions=inputs.positions,
                **model_kwargs,
            )
        logits = self.model.compute_logits(model_output)
        self.execute_model_state = (logits, inputs)
        return None

    def sample_tokens(self, grammar_output):
        if self.execute_model_state is None:
            return None
        state = self.execute_model_state
        self.execute_model_state = None
        sampler_output = self._sample(state[0], grammar_output)
        self.stage_state.record_sampled(sampler_output)
        return self._bookkeeping(sampler_output)

    def _build_model_kwargs_extra(self):
        extra = {}
        if self.model_intermediate_buffer:
            extra["runtime_additional_information"] = self.model_intermediate_buffer
        return extra
