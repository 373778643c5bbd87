from typing import NamedTuple

from fakevllm.forward_context import set_forward_context
from fakevllm.v1.outputs import SamplerOutput
from fakevllm.v1.worker.gpu_model_runner import GPUModelRunner


class ExecuteModelState(NamedTuple):
    """State handed from execute_model to sample_tokens."""

    scheduler_output: object
    logits: object
    hidden_states: object


class NPUModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        self.execute_model_state: ExecuteModelState | None = None

    def _build_attention_metadata(self, num_tokens, *, num_reqs=None, max_query_len=None):
        return {"num_tokens": num_tokens, "num_reqs": num_reqs, "max_query_len": max_query_len}

    def _sample(self, logits, spec_decode_metadata):
        return SamplerOutput(logits.argmax(-1), None)

    def _model_forward(self, input_ids, positions, attn_metadata):
        return self.model(input_ids, positions, attn_metadata)

    def execute_model(self, scheduler_output):
        self._update_states(scheduler_output)
        num_tokens = scheduler_output.total_num_scheduled_tokens
        input_ids, positions = self._prepare_inputs(scheduler_output, num_tokens)
        attn_metadata = self._build_attention_metadata(num_tokens, num_reqs=len(input_ids))
        with set_forward_context(attn_metadata, self.vllm_config, num_tokens=num_tokens):
            hidden_states = self._model_forward(input_ids, positions, attn_metadata)
        logits = self.model.compute_logits(hidden_states)
        self.execute_model_state = ExecuteModelState(scheduler_output, logits, hidden_states)
        return None

    def sample_tokens(self, grammar_output):
        (scheduler_output, logits, hidden_states) = self.execute_model_state
        self.execute_model_state = None
        sampler_output = self._sample(logits, None)
        self.propose_draft_token_ids(sampler_output.sampled_token_ids, hidden_states)
        return self.make_output(scheduler_output.req_ids, sampler_output.sampled_token_ids)
