# Synthetic omni runner written for omni-port's tests: a copy of the synthetic upstream's
# methods with omni blocks spliced in, in every marker style the real runners use.
from __future__ import annotations

import logging
from typing import Any, NamedTuple

from fakeacc.forward_context import set_acc_forward_context
from fakeacc.profiling import record_function_or_nullcontext
from fakeacc.sampling import apply_grammar_bitmask
from fakeacc.scheduler import SchedulerOutput
from fakeomni.kv import OmniKVTransferManager
from fakeomni.outputs import OmniModelRunnerOutput
from fakeomni.runner import OmniNPUModelRunner

logger = logging.getLogger(__name__)


def _to_payload(hidden):
    return {"hidden": hidden}


class ExecuteModelState(NamedTuple):
    """State handed from execute_model() to sample_tokens()."""

    scheduler_output: SchedulerOutput
    logits: object
    hidden_states: object
    multimodal_outputs: Any  # Omni-Specific


class NPUARModelRunner(OmniNPUModelRunner):
    """Autoregressive runner that also returns hidden states per request."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.hidden_size = self.model_config.hidden_size
        #  -------------------------------------- Omni-new -------------------------------------------------
        self.kv_transfer_manager = OmniKVTransferManager.from_config(self.config)
        self.kv_extracted_req_ids = None
        #  -------------------------------------- Omni-new -------------------------------------------------

    #  -------------------------------------- Omni-new -------------------------------------------------
    def _resolve_global_request_id(self, req_id: str) -> str:
        """Map a local request id to the id the whole pipeline knows."""
        info = self.model_intermediate_buffer.get(req_id, {})
        return str(info.get("global_request_id", req_id))

    def _payload_for(self, hidden):
        return _to_payload(hidden)
    #  -------------------------------------- Omni-new -------------------------------------------------

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        if self.execute_model_state is not None:
            raise RuntimeError("sample_tokens() must follow execute_model()")

        # ---------------------------------------Omni-new----------------------------------------------
        # [Omni] Handle KV transfer BEFORE updating states (which removes finished requests)
        self.kv_extracted_req_ids = self.kv_transfer_manager.handle_finished(
            finished_reqs=getattr(scheduler_output, "finished_requests_needing_kv_transfer", {}),
            request_id_resolver=self._resolve_global_request_id,
        )
        # ---------------------------------------Omni-new----------------------------------------------

        num_scheduled_tokens = scheduler_output.total_num_scheduled_tokens
        with record_function_or_nullcontext("prepare input"):
            with self.synchronize_input_prep():
                # Update persistent batch states.
                #  -------------------------------------- Omni-new -------------------------------------------------
                self._update_states(scheduler_output)
                #  ------------------------------------------------------------------------------------------------
                if not num_scheduled_tokens:
                    return None
            input_ids, positions = self._preprocess(scheduler_output)

        # Run forward pass
        with record_function_or_nullcontext("forward"), set_acc_forward_context(self.config):
            hidden_states = self._model_forward(input_ids, positions)

        with record_function_or_nullcontext("post process"):
            #  -------------------------------------- Omni-new -------------------------------------------------
            hidden_states, multimodal_outputs = self.extract_multimodal_outputs(hidden_states)
            if multimodal_outputs is not None:
                logger.debug("[AR] multimodal outputs: %s", type(multimodal_outputs))
            #  -------------------------------------- Omni-new -------------------------------------------------
            if not self.broadcast_pp_output:
                # Common case.
                sample_hidden_states = hidden_states[self.logits_indices]
                #  -------------------------------------- Omni-new -------------------------------------------------
                # Try with sampling_metadata first; fall back for models that don't take it
                try:
                    logits = self.model.compute_logits(
                        sample_hidden_states, sampling_metadata=self.input_batch.sampling_metadata
                    )
                except TypeError:
                    logits = self.model.compute_logits(sample_hidden_states)
                #  -------------------------------------- Omni-new -------------------------------------------------
            else:
                # Rare case.
                if not self.is_last_rank:
                    logits = None
                else:
                    sample_hidden_states = hidden_states[self.logits_indices]
                    #  -------------------------------------- Omni-new -------------------------------------------------
                    # Try with sampling_metadata first; fall back for models that don't take it
                    try:
                        logits = self.model.compute_logits(
                            sample_hidden_states, sampling_metadata=self.input_batch.sampling_metadata
                        )
                    except TypeError:
                        logits = self.model.compute_logits(sample_hidden_states)
                    #  -------------------------------------- Omni-new -------------------------------------------------
            self.execute_model_state = ExecuteModelState(
                scheduler_output,
                logits,
                hidden_states,
                multimodal_outputs,  # Omni-specific
            )
        return None

    def sample_tokens(self, grammar_output):
        #  -------------------------------------- Omni-new -------------------------------------------------
        kv_extracted_req_ids = self.kv_extracted_req_ids
        self.kv_extracted_req_ids = None
        #  -------------------------------------- Omni-new -------------------------------------------------
        kv_connector_output = self.kv_connector_output
        self.kv_connector_output = None
        if self.execute_model_state is None:
            return None

        scheduler_output, logits, hidden_states, multimodal_outputs = self.execute_model_state
        self.execute_model_state = None
        if grammar_output is not None:
            apply_grammar_bitmask(scheduler_output, grammar_output, logits)

        with record_function_or_nullcontext("sample"):
            sampler_output = self.sampler(logits)
        req_ids = list(self.input_batch.req_ids)
        #  -------------------------------------- Omni-new -------------------------------------------------
        pooler_output = [self._payload_for(hidden_states[i]) for i, _ in enumerate(req_ids)]
        output = OmniModelRunnerOutput(
            req_ids=req_ids,
            sampled_token_ids=sampler_output.sampled_token_ids,
            pooler_output=pooler_output,
            kv_connector_output=kv_connector_output,
        )
        output.kv_extracted_req_ids = kv_extracted_req_ids
        #  -------------------------------------- Omni-new -------------------------------------------------
        return output
