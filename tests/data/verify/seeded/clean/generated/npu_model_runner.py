"""Synthetic generated runner base: omni behaviour over the upstream runner."""

from fakeacc.worker.runner import NPUModelRunner
from fakeomni.worker.gpu_model_runner import OmniGPUModelRunner


class OmniNPUModelRunner(OmniGPUModelRunner, NPUModelRunner):
    def _dummy_run(self, num_tokens):
        # >>> block
        attn_metadata = self._build_attention_metadata(num_tokens, num_reqs=1, max_query_len=1)
        # <<<
        return self._model_forward(None, None, attn_metadata)
