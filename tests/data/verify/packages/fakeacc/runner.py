from contextlib import nullcontext


class GPUModelRunner:
    """What the synthetic runners expect from their accelerator base class."""

    def __init__(self, config, device):
        self.config = config
        self.model_config = config.model_config
        self.lora_config = config.lora_config
        self.loader = config.loader
        self.input_batch = config.new_batch()
        self.input_ids = []
        self.positions = []
        self.logits_indices = slice(None)
        self.broadcast_pp_output = False
        self.is_last_rank = True
        self.use_aux_hidden_state_outputs = False

    def synchronize_input_prep(self):
        return nullcontext()

    def maybe_dummy_run_with_lora(self, lora_config):
        return nullcontext(lora_config)

    def _update_states(self, scheduler_output):
        self.input_batch.update(scheduler_output)

    def _preprocess(self, scheduler_output):
        return self.input_ids, self.positions

    def dummy_compute_logits(self, hidden_states):
        return hidden_states

    def make_output(self, **fields):
        return fields
