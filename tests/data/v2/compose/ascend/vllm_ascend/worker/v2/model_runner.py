# A tiny stand-in for vllm-ascend's V2 NPUModelRunner, written for omni-port's tests.
from vllm.v1.worker.gpu.model_runner import GPUModelRunner, make_batch, make_output

from vllm_ascend.worker.v2.utils import npu_stream, seq_lens_cpu


class NPUModelRunner(GPUModelRunner):
    """Model runner for NPUs."""

    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        self.stream = npu_stream()

    def load_model(self):
        self.model = self.vllm_config.npu_model_class(self.vllm_config)

    def profile_run(self):
        """Reserve the communication buffer before the standard profiling."""
        self._dummy_run(self.mc2_capacity)
        super().profile_run()

    def prepare_inputs(self, scheduler_output, batch_desc):
        batch = make_batch(scheduler_output, batch_desc)
        batch.seq_lens_cpu = seq_lens_cpu(batch)
        return batch

    def compute_logits(self, hidden):
        hidden = hidden[self.logits_indices]
        logits = self.model.compute_logits(hidden.contiguous())
        logits = logits.float()
        return logits

    def sample_tokens(self, grammar_output=None):
        input_batch, hidden = self.state
        logits = self.compute_logits(hidden)
        sampled = self.sampler(logits, input_batch)
        self.stream.synchronize()
        self.postprocess_sampled(input_batch, sampled)
        return make_output(input_batch, sampled)

    def postprocess_sampled(self, input_batch, sampled):
        super().postprocess_sampled(input_batch, sampled)
        self.copy_computed_tokens_to_cpu()
