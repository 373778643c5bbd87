from fakeacc.context import set_acc_forward_context
from fakevllm.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output):
        self._update_states(scheduler_output)
        inputs = self._prepare_inputs(scheduler_output)
        with set_acc_forward_context(self.config, with_prefill=True):
            hidden = self.model(**inputs)
            hidden = self._all_gather(hidden)
        logits = self.model.compute_logits(hidden)
        return logits
