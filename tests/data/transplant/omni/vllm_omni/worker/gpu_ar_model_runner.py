"""Synthetic omni GPU AR runner (written for omni-port's tests): a copy the NPU AR lacks."""

from vllm_omni.worker.gpu_model_runner import OmniGPUModelRunner


class GPUARModelRunner(OmniGPUModelRunner):
    def sample_tokens(self, grammar_output):
        if self.execute_model_state is None:
            return None
        state = self.execute_model_state
        self.execute_model_state = None
        sampler_output = self._sample(state[0], grammar_output)
        self.talker_buffer.append(sampler_output.sampled_token_ids)
        return self._bookkeeping(sampler_output)

    def _capture_talker_graphs(self):
        for size in self.talker_graph_sizes:
            self.talker_graphs[size] = self._capture_one_talker_graph(size)
