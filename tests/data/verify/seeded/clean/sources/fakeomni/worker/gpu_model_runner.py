class OmniGPUModelRunner:
    """Omni behaviour shared by the GPU and NPU runners."""

    def extract_multimodal_outputs(self, hidden_states):
        if isinstance(hidden_states, tuple):
            return hidden_states[0], hidden_states[1]
        return hidden_states, None
