"""Synthetic omni NPU AR runner (written for omni-port's tests): no sample_tokens of its own."""

from vllm_omni.platforms.npu.worker.npu_model_runner import OmniNPUModelRunner


class NPUARModelRunner(OmniNPUModelRunner):
    def _prepare_talker_inputs(self, inputs):
        return self.talker_adapter(inputs)
