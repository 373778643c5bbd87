# A tiny stand-in for vLLM's Model Runner V2, written for omni-port's tests.
import torch

from vllm.v1.worker.gpu.block_table import BlockTables
from vllm.v1.worker.gpu.dp_utils import dispatch_cg_and_sync_dp
from vllm.v1.worker.gpu.input_batch import InputBatch
from vllm.v1.worker.gpu.model_states import init_model_state


class GPUModelRunner:
    def __init__(self, vllm_config, device):
        self.vllm_config = vllm_config
        self.device = device
        self.requests = {}
        self.block_tables = BlockTables(vllm_config.max_num_reqs)

    def load_model(self, *args, **kwargs):
        self.model = self.vllm_config.model_class(self.vllm_config)
        self.model_state = init_model_state(self.vllm_config, self.model, None, self.device)

    def initialize_kv_cache(self, kv_cache_config):
        self.kv_cache_config = kv_cache_config

    def profile_run(self):
        self._dummy_run(self.max_num_tokens)
        torch.accelerator.synchronize()

    def _dummy_run(self, num_tokens):
        return self.execute_model(None, dummy_run=True)

    def prepare_inputs(self, scheduler_output, batch_desc):
        return InputBatch.make(scheduler_output, batch_desc)

    def execute_model(self, scheduler_output, intermediate_tensors=None, dummy_run=False):
        batch_desc = dispatch_cg_and_sync_dp(self.cudagraph_manager, scheduler_output.num_reqs)
        input_batch = self.prepare_inputs(scheduler_output, batch_desc)
        hidden = self.model(input_batch)
        self.execute_model_state = (input_batch, hidden)
        return None

    def sample_tokens(self, grammar_output=None):
        input_batch, hidden = self.execute_model_state
        sampled = self.sampler(self.model.compute_logits(hidden), input_batch)
        self.postprocess_sampled(input_batch, sampled)
        return sampled

    def postprocess_sampled(self, input_batch, sampled):
        self.requests.update(zip(input_batch.req_ids, sampled))
