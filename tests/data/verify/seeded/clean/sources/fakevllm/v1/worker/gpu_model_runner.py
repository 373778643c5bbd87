from fakevllm.config import VllmConfig
from fakevllm.v1.outputs import ModelRunnerOutput


class GPUModelRunner:
    def __init__(self, vllm_config: VllmConfig, device):
        self.vllm_config = vllm_config
        self.model_config = vllm_config.model_config
        self.device = device
        self.input_batch = None
        self.model = None
        self.execute_model_state = None

    def _update_states(self, scheduler_output):
        self.input_batch.update(scheduler_output)

    def _prepare_inputs(self, scheduler_output, num_scheduled_tokens):
        return self.input_batch.prepare(scheduler_output, num_scheduled_tokens)

    def propose_draft_token_ids(self, sampled_token_ids, hidden_states, batch_desc=None):
        return None

    def make_output(self, req_ids, sampled_token_ids):
        return ModelRunnerOutput(req_ids, sampled_token_ids)
