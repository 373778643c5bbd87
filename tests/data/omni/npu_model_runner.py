# Synthetic omni runner written for omni-port's tests.
from fakeacc.forward_context import set_acc_forward_context
from fakeacc.graphs import ACLGraphWrapper
from fakeacc.runner_v1 import NPUModelRunner
from fakeomni.gpu_runner import OmniGPUModelRunner
from fakeomni.outputs import OmniOutput


class OmniNPUModelRunner(OmniGPUModelRunner, NPUModelRunner):
    def load_model(self, *args, **kwargs) -> None:
        NPUModelRunner.load_model(self, *args, **kwargs)
        # ---------------------------------------Omni-new----------------------------------------------
        talker_mtp = getattr(self.model, "talker_mtp", None)
        if talker_mtp is not None:
            self.talker_mtp = ACLGraphWrapper(talker_mtp, self.config)
        # ---------------------------------------Omni-new----------------------------------------------

    def _dummy_run(self, num_tokens, is_profile=False):
        num_tokens_padded = min(num_tokens, self.max_num_tokens)
        input_ids = self.input_ids[:num_tokens_padded]
        positions = self.positions[:num_tokens_padded]
        with self.maybe_dummy_run_with_lora(self.lora_config):
            with set_acc_forward_context(self.config, num_tokens=num_tokens_padded):
                # ---------------------------------------Omni-new----------------------------------------------
                if getattr(self.model, "talker", None) is not None and hasattr(self.model, "talker_mtp"):
                    self.talker_mtp(self.talker_mtp_input_ids[:num_tokens_padded])
                # ---------------------------------------Omni-new----------------------------------------------
                hidden_states = self._model_forward(input_ids, positions)
            if self.use_aux_hidden_state_outputs:
                hidden_states, _ = hidden_states
            # ---------------------------------------Omni-new----------------------------------------------
            hidden_states, multimodal_outputs = self.extract_multimodal_outputs(hidden_states)
            # ---------------------------------------Omni-new----------------------------------------------
            self.dummy_compute_logits(hidden_states)
        return hidden_states

    def _model_forward(self, input_ids, positions, **model_kwargs):
        """Combine the upstream signature with the omni output wrapping."""
        model_kwargs_extra = self._build_model_kwargs_extra()
        output = self.model(input_ids=input_ids, positions=positions, **model_kwargs, **model_kwargs_extra)
        if not isinstance(output, OmniOutput) and hasattr(self.model, "make_omni_output"):
            output = self.model.make_omni_output(output, **model_kwargs_extra)
        self._omni_last_model_output = output
        return output
