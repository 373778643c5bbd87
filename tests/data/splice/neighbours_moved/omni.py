from fakeacc.profiling import record
from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute_model(self, scheduler_output):
        if self.state is not None:
            raise RuntimeError("state error")
        # ---------- Omni-new ----------
        self.kv_ids = self.kv_manager.handle(scheduler_output)
        # ---------- Omni-new ----------
        num_tokens = scheduler_output.total_num_scheduled_tokens
        with record("prepare input"):
            self._update_states(scheduler_output)
            inputs = self._prepare(scheduler_output, num_tokens)
        hidden = self._forward(inputs)
        # ---------- Omni-new ----------
        try:
            logits = self.model.compute_logits(hidden, meta=self.meta)
        except TypeError:
            logits = self.model.compute_logits(hidden)
        # ---------- Omni-new ----------
        return logits
