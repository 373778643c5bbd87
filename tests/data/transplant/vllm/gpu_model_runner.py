"""Synthetic vLLM runner (written for omni-port's tests): the class the GPU runners copy."""

from fakevllm.context import set_forward_context
from fakevllm.outputs import EMPTY_MODEL_RUNNER_OUTPUT


class GPUModelRunner:
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        self._update_states(scheduler_output)
        if self.use_async_scheduling:
            self._sync_async_state(scheduler_output)
        if not scheduler_output.total_num_scheduled_tokens:
            return EMPTY_MODEL_RUNNER_OUTPUT
        inputs = self._prepare_inputs(scheduler_output)
        with set_forward_context(self.attn_metadata, self.vllm_config):
            model_output = self._model_forward(
                input_ids=inputs.input_ids,
                positions=inputs.positions,
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
        return self._bookkeeping(sampler_output)
