# A V2 patch of vLLM's runner module globals and class, written for omni-port's tests.
from vllm.v1.worker.gpu import model_runner as upstream
from vllm.v1.worker.gpu.dp_utils import dispatch_cg_and_sync_dp as _dispatch_cg_and_sync_dp


def dispatch_cg_and_sync_dp(cudagraph_manager, num_reqs, *args, **kwargs):
    # Sharded decode dispatches rank-local request counts.
    return _dispatch_cg_and_sync_dp(cudagraph_manager, num_reqs, *args, **kwargs)


def initialize_kv_cache(self, kv_cache_config):
    self.kv_cache_config = kv_cache_config


upstream.dispatch_cg_and_sync_dp = dispatch_cg_and_sync_dp

upstream.GPUModelRunner.initialize_kv_cache = initialize_kv_cache
