"""Synthetic omni GPU runner: copies of the older vLLM execute_model, the newer sample_tokens."""

import torch
from fakevllm.context import set_forward_context
from fakevllm.outputs import EMPTY_MODEL_RUNNER_OUTPUT
from fakevllm.worker.gpu_model_runner import GPUModelRunner


class OmniGPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        self._update_states(scheduler_output)
        if self.use_cuda_graph_capture:
            torch.cuda.synchronize()
        if not scheduler_output.total_num_scheduled_tokens:
            return EMPTY_MODEL_RUNNER_OUTPUT
        inputs = self._prepare_inputs(scheduler_output)
        model_kwargs = self._build_model_kwargs_extra()
        with set_forward_context(self.attn_metadata, self.vllm_config):
            model_output = self._model_forward(
                input_ids=inputs.input_ids,
                positions=inputs.positions,
                **model_kwargs,
                sampling_metadata=self.input_batch.sampling_metadata,
            )
        hidden_states, multimodal_outputs = self.extract_multimodal_outputs(model_output)
        logits = self.model.compute_logits(hidden_states)
        self.execute_model_state = (logits, inputs)
        return None

    def sample_tokens(self, grammar_output):
        if self.execute_model_state is None:
            return None
        state = self.execute_model_state
        self.execute_model_state = None
        sampler_output = self._sample(state[0], grammar_output)
        self._omni_postprocess(sampler_output)
        return self._bookkeeping(sampler_output)

    def _build_model_kwargs_extra(self):
        extra = {}
        if self.model_intermediate_buffer:
            extra["runtime_additional_information"] = self.model_intermediate_buffer
        return extra
