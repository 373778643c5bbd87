from fakevllm.context import set_forward_context


class GPUModelRunner:
    def execute_model(self, scheduler_output):
        self._update_states(scheduler_output)
        inputs = self._prepare_inputs(scheduler_output)
        with set_forward_context(self.config):
            hidden = self.model(**inputs)
        logits = self.model.compute_logits(hidden)
        return logits
