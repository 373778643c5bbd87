from fakeacc.profiling import record
from fakeacc.runner import GPUModelRunner
from fakeacc.stats import record_stats


class NPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        if self.state is not None:
            raise RuntimeError(
                "state error"
            )
        num_tokens = scheduler_output.total_num_scheduled_tokens
        with record("prepare input"):
            # Update persistent batch states.
            self._update_states(scheduler_output)
            self._sync_metadata()
            inputs = self._prepare(scheduler_output, num_tokens)
        hidden = self._forward(inputs, intermediate_tensors)
        logits = self.model.compute_logits(hidden)
        record_stats(logits)
        return logits
