"""Synthetic generated AR runner: copies of the upstream methods with omni blocks."""

from typing import Any, NamedTuple

from fakevllm.forward_context import set_forward_context
from fakevllm.v1.outputs import SamplerOutput

from fakeomni.npu.npu_model_runner import OmniNPUModelRunner


class ExecuteModelState(NamedTuple):
    """State handed from execute_model to sample_tokens."""

    scheduler_output: object
    logits: object
    hidden_states: object
    multimodal_outputs: Any  # Omni-specific


class NPUARModelRunner(OmniNPUModelRunner):
    def execute_model(self, scheduler_output):
        self._update_states(scheduler_output)
        num_tokens = scheduler_output.total_num_scheduled_tokens
        input_ids, positions = self._prepare_inputs(scheduler_output, num_tokens)
        attn_metadata = self._build_attention_metadata(num_tokens, num_reqs_padded=len(input_ids))
        with set_forward_context(attn_metadata, self.vllm_config, num_tokens=num_tokens):
            hidden_states = self._model_forward(input_ids, positions, attn_metadata)
        # >>> block
        hidden_states, multimodal_outputs = self.extract_multimodal_outputs(hidden_states)
        # <<<
        logits = self.model.compute_logits(hidden_states)
        self.execute_model_state = ExecuteModelState(
            scheduler_output,
            logits,
            hidden_states,
            multimodal_outputs,  # Omni-specific
        )
        return None

    def sample_tokens(self, grammar_output):
        (
            scheduler_output,
            logits,
            hidden_states,
            multimodal_outputs,  # Omni-specific
        ) = self.execute_model_state
        self.execute_model_state = None
        # >>> block
        spec_decode_metadata = None
        sampler_output: SamplerOutput = self._sample(logits, spec_decode_metadata)
        # <<<
        self.propose_draft_token_ids(sampler_output.sampled_token_ids, hidden_states)
        output = self.make_output(scheduler_output.req_ids, sampler_output.sampled_token_ids)
        # >>> block
        output.multimodal_outputs = multimodal_outputs
        # <<<
        return output
