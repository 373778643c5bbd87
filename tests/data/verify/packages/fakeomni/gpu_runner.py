class OmniGPUModelRunner:
    """Omni behaviour shared by every runner."""

    def __init__(self, *args, **kwargs):
        self.model_intermediate_buffer = {}
        self.talker_mtp_input_ids = []
        self._omni_last_model_output = None

    def extract_multimodal_outputs(self, hidden_states):
        return hidden_states, None

    def _update_request_states(self, scheduler_output):
        self.model_intermediate_buffer.clear()

    def _build_model_kwargs_extra(self):
        return {}
