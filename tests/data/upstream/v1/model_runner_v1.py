# Synthetic upstream runner written for omni-port's tests. It mimics the shape of an
# accelerator model runner (nested `with` blocks, pipeline branches, a NamedTuple state)
# without being one.
from __future__ import annotations

from contextlib import nullcontext
from typing import NamedTuple

from fakeacc.forward_context import set_acc_forward_context
from fakeacc.profiling import record_function_or_nullcontext
from fakeacc.runner import GPUModelRunner
from fakeacc.sampling import apply_grammar_bitmask
from fakeacc.scheduler import SchedulerOutput

SEQ_LEN_LIMIT = 6144


def graph_capture(device):
    return nullcontext(device)


class ExecuteModelState(NamedTuple):
    """State handed from execute_model() to sample_tokens()."""

    scheduler_output: SchedulerOutput
    logits: object
    hidden_states: object


class NPUModelRunner(GPUModelRunner):
    def __init__(self, config, device):
        super().__init__(config, device)
        self.device = device
        self.max_num_tokens = config.max_num_tokens
        self.execute_model_state = None
        self.kv_connector_output = None

    def load_model(self) -> None:
        self.model = self.loader.load(self.config)
        self.sampler = self.loader.sampler(self.config)

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        if self.execute_model_state is not None:
            raise RuntimeError("sample_tokens() must follow execute_model()")

        num_scheduled_tokens = scheduler_output.total_num_scheduled_tokens
        with record_function_or_nullcontext("prepare input"):
            with self.synchronize_input_prep():
                # Update persistent batch states.
                self._update_states(scheduler_output)
                if not num_scheduled_tokens:
                    return None
            input_ids, positions = self._preprocess(scheduler_output)

        # Run forward pass
        with record_function_or_nullcontext("forward"), set_acc_forward_context(self.config):
            hidden_states = self._model_forward(input_ids, positions)

        with record_function_or_nullcontext("post process"):
            if not self.broadcast_pp_output:
                # Common case.
                sample_hidden_states = hidden_states[self.logits_indices]
                logits = self.model.compute_logits(sample_hidden_states)
            else:
                # Rare case.
                if not self.is_last_rank:
                    logits = None
                else:
                    sample_hidden_states = hidden_states[self.logits_indices]
                    logits = self.model.compute_logits(sample_hidden_states)
            self.execute_model_state = ExecuteModelState(
                scheduler_output,
                logits,
                hidden_states,
            )
        return None

    def sample_tokens(self, grammar_output):
        kv_connector_output = self.kv_connector_output
        self.kv_connector_output = None
        if self.execute_model_state is None:
            return None

        scheduler_output, logits, hidden_states = self.execute_model_state
        self.execute_model_state = None
        if grammar_output is not None:
            apply_grammar_bitmask(scheduler_output, grammar_output, logits)

        with record_function_or_nullcontext("sample"):
            sampler_output = self.sampler(logits)
        req_ids = list(self.input_batch.req_ids)
        output = self.make_output(
            req_ids=req_ids,
            sampled_token_ids=sampler_output.sampled_token_ids,
            kv_connector_output=kv_connector_output,
        )
        return output

    def _model_forward(self, input_ids, positions, **model_kwargs):
        assert self.model is not None
        return self.model(input_ids=input_ids, positions=positions, **model_kwargs)

    def _dummy_run(self, num_tokens, is_profile=False):
        num_tokens_padded = min(num_tokens, self.max_num_tokens)
        input_ids = self.input_ids[:num_tokens_padded]
        positions = self.positions[:num_tokens_padded]
        with self.maybe_dummy_run_with_lora(self.lora_config):
            with set_acc_forward_context(self.config, num_tokens=num_tokens_padded):
                hidden_states = self._model_forward(input_ids, positions)
            if self.use_aux_hidden_state_outputs:
                hidden_states, _ = hidden_states
            self.dummy_compute_logits(hidden_states)
        return hidden_states

    def profile_run(self) -> None:
        hidden_states = self._dummy_run(self.max_num_tokens, is_profile=True)
        del hidden_states
