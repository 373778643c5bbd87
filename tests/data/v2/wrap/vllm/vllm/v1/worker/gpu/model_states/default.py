# A tiny stand-in for vLLM's default model state, written for omni-port's tests.


class DefaultModelState:
    def __init__(self, vllm_config, model, encoder_cache, device):
        self.model = model
        self.requests = {}

    def add_request(self, req_index, new_req_data):
        self.requests[new_req_data.req_id] = req_index

    def remove_request(self, req_id):
        self.requests.pop(req_id, None)

    def prepare_inputs(self, input_batch, req_states):
        return {}

    def prepare_attn(self, input_batch):
        return {"num_reqs": input_batch.num_reqs}
