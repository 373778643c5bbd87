from fakeacc.profiling import record
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output):
        if self.state is not None:
            raise RuntimeError("state error")
        num_tokens = scheduler_output.total_num_scheduled_tokens
        with record("prepare input"):
            self._update_states(scheduler_output)
            inputs = self._prepare(scheduler_output, num_tokens)
        hidden = self._forward(inputs)
        if not self.broadcast_pp_output:
            logits = self.model.compute_logits(hidden)
        elif self.is_last_rank:
            logits = self.model.compute_logits(hidden)
        else:
            logits = None
        return logits
