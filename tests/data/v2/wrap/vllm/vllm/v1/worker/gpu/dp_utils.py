# Stand-ins of vLLM's V2 helpers, written for omni-port's tests.


def dispatch_cg_and_sync_dp(cudagraph_manager, num_reqs, *args, **kwargs):
    return cudagraph_manager.dispatch(num_reqs)
