# Synthetic omni runner written for omni-port's tests.
from __future__ import annotations

import torchlike

from fakeacc.forward_context import set_acc_forward_context
from fakeacc.profiling import record_function_or_nullcontext
from fakeomni.ar_runner import ExecuteModelState
from fakeomni.outputs import OmniModelRunnerOutput
from fakeomni.runner import OmniNPUModelRunner


class NPUGenerationModelRunner(OmniNPUModelRunner):
    """Non-autoregressive runner: the model output is the result, nothing is sampled."""

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        if self.execute_model_state is not None:
            raise RuntimeError("sample_tokens() must follow execute_model()")

        num_scheduled_tokens = scheduler_output.total_num_scheduled_tokens
        with record_function_or_nullcontext("prepare input"):
            #  -------------------------------------- Omni-new -------------------------------------------------
            if self.model_config.async_chunk and num_scheduled_tokens:
                self._update_request_states(scheduler_output)
            #  -------------------------------------- Omni-new -------------------------------------------------
            with self.synchronize_input_prep():
                # Update persistent batch states.
                self._update_states(scheduler_output)
                if not num_scheduled_tokens:
                    return None
            input_ids, positions = self._preprocess(scheduler_output)
            # [Omni] Pass token counts per request for code2wav output slicing
            model_kwargs = {"seq_token_counts": scheduler_output.num_scheduled_tokens}

        # Run forward pass
        with record_function_or_nullcontext("forward"), set_acc_forward_context(self.config):
            #  -------------------------------------- Omni-new -------------------------------------------------
            outputs = self._run_generation_model(input_ids, positions, model_kwargs=model_kwargs)
            _, multimodal_outputs = self.extract_multimodal_outputs(outputs)
            # -------------------------------------- Omni-new -------------------------------------------------

        with record_function_or_nullcontext("post process"):
            self.execute_model_state = ExecuteModelState(scheduler_output, None, outputs, multimodal_outputs)
        return None

    def sample_tokens(self, grammar_output):
        kv_connector_output = self.kv_connector_output
        self.kv_connector_output = None
        if self.execute_model_state is None:
            return None

        scheduler_output, logits, hidden_states, multimodal_outputs = self.execute_model_state
        self.execute_model_state = None
        #  -------------------------------------- Omni-new -------------------------------------------------
        pooler_output: list[object] = []
        if isinstance(multimodal_outputs, torchlike.Tensor):
            pooler_output = [multimodal_outputs[i].cpu() for i in range(self.input_batch.num_reqs)]
        elif isinstance(multimodal_outputs, list):
            pooler_output = [out.cpu() if out is not None else None for out in multimodal_outputs]
        else:
            raise RuntimeError("Unsupported generation output type")
        output = OmniModelRunnerOutput(
            req_ids=list(self.input_batch.req_ids),
            sampled_token_ids=[],
            pooler_output=pooler_output,
            kv_connector_output=kv_connector_output,
        )
        #  -------------------------------------- Omni-new -------------------------------------------------
        return output

    def _run_generation_model(self, input_ids, positions, model_kwargs):
        return self._model_forward(input_ids, positions, **model_kwargs)

    def _dummy_run(self, num_tokens, is_profile=False):
        num_tokens_padded = min(num_tokens, self.max_num_tokens)
        input_ids = self.input_ids[:num_tokens_padded]
        positions = self.positions[:num_tokens_padded]
        with self.maybe_dummy_run_with_lora(self.lora_config):
            with set_acc_forward_context(self.config, num_tokens=num_tokens_padded):
                hidden_states = self._model_forward(input_ids, positions)
            if self.use_aux_hidden_state_outputs:
                hidden_states, _ = hidden_states
            # -------------------------------------- Omni-new -------------------------------------------------
            hidden_states, _ = self.extract_multimodal_outputs(hidden_states)
            # -------------------------------------------------------------------------------------------------
            self.dummy_compute_logits(hidden_states)
        return hidden_states
