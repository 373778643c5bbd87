# The NPU's model state in the tiny vllm-ascend stand-in, written for omni-port's tests.
from vllm.v1.worker.gpu.model_states.default import DefaultModelState


def _forget(offloaded, req_id):
    """Offloaded state of a finished request is freed with it."""
    offloaded.pop(req_id, None)


class AscendModelState(DefaultModelState):
    """Model state for NPUs: its own attention metadata."""

    def __init__(self, vllm_config, model, encoder_cache, device):
        super().__init__(vllm_config, model, encoder_cache, device)
        self.offloaded = {}

    def finish_execution(self, *, failed):
        self.offloaded.clear()

    def remove_request(self, req_id):
        super().remove_request(req_id)
        _forget(self.offloaded, req_id)

    def prepare_attn(self, input_batch):
        # The NPU's attention builders read their own metadata.
        return {"attn_state": input_batch.num_reqs}
