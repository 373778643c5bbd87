# A tiny stand-in for a later vLLM Model Runner V2, written for omni-port's tests.
import torch


def build_model(config):
    return config.model_class(config)


def make_batch(scheduler_output, batch_desc):
    return scheduler_output.batch(batch_desc)


def make_output(input_batch, sampled):
    return {"req_ids": input_batch.req_ids, "sampled": sampled}


class GPUModelRunner:
    def __init__(self, vllm_config, device):
        self.vllm_config = vllm_config
        self.device = device
        self.requests = {}

    def get_model(self):
        return self.model

    def load_model(self):
        self.model = build_model(self.vllm_config)

    def profile_run(self):
        hidden = self._dummy_run(self.max_num_tokens)
        self._dummy_sampler_run(hidden)
        torch.accelerator.synchronize()
        del hidden

    def prepare_inputs(self, scheduler_output, batch_desc):
        return make_batch(scheduler_output, batch_desc)

    def execute_model(self, scheduler_output):
        batch_desc = self.dispatch(scheduler_output)
        input_batch = self.prepare_inputs(scheduler_output, batch_desc)
        hidden = self.model(input_batch)
        self.state = (input_batch, hidden)
        return None

    def compute_logits(self, hidden):
        hidden = hidden[self.logits_indices]
        logits = self.model.compute_logits(hidden)
        logits = logits.float()
        return logits

    def sample_tokens(self, grammar_output=None):
        input_batch, hidden = self.state
        logits = self.compute_logits(hidden)
        sampled = self.sampler(logits, input_batch)
        self.postprocess_sampled(input_batch, sampled)
        return make_output(input_batch, sampled)

    def postprocess_sampled(self, input_batch, sampled):
        self.requests.update(zip(input_batch.req_ids, sampled))

    def gather_state(self, input_batch):
        return [self.requests.get(req_id) for req_id in input_batch.req_ids]
