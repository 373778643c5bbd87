# Stand-ins of vLLM-Omni's helpers, written for omni-port's tests.


class OmniOutput:
    text_hidden_states = None
    multimodal_outputs = None


def make_omni_output(model_output):
    return model_output if isinstance(model_output, OmniOutput) else OmniOutput()
