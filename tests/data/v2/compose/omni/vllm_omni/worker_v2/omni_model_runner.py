# A tiny stand-in for vLLM-Omni's V2 GPU runner, written for omni-port's tests.
from vllm.v1.worker.gpu.model_runner import GPUModelRunner, make_output


class OmniGPUModelRunner(GPUModelRunner):
    """Omni hooks on Model Runner V2."""

    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        self.buffers = {}

    def load_model(self):
        super().load_model()
        self.model.omni = True

    def execute_model(self, scheduler_output):
        batch_desc = self.dispatch(scheduler_output)
        input_batch = self.prepare_inputs(scheduler_output, batch_desc)
        hidden = self.model(input_batch)
        # Keep the hidden states for the next stage.
        self.buffers["hidden"] = hidden
        self.state = (input_batch, hidden)
        return None

    def compute_logits(self, hidden):
        hidden = hidden[self.logits_indices]
        try:
            logits = self.model.compute_logits(hidden)
        except AttributeError:
            logits = None
        logits = logits.float()
        return logits

    def sample_tokens(self, grammar_output=None):
        input_batch, hidden = self.state
        logits = self.compute_logits(hidden)
        sampled = self.sampler(logits, input_batch)
        self.postprocess_sampled(input_batch, sampled)
        self.buffers.update(input_batch.extra)
        return make_output(input_batch, sampled)

    def _omni_helper(self, input_batch, sampled):
        state = self.gather_state(input_batch)
        self.postprocess_sampled(input_batch, sampled, state)
        return dict(self.buffers)
