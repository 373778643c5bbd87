from fakeacc.profiling import record
from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute_model(self, batch):
        with record("post process"):
            if not self.broadcast:
                sample = self.hidden[self.indices]
                logits = self.model.compute_logits(sample)
            else:
                if not self.is_last_rank:
                    logits = None
                else:
                    sample = self.hidden[self.indices]
                    #  ------ Omni-new ------
                    self.trace(sample)
                    #  ------ Omni-new ------
                    logits = self.model.compute_logits(sample)
        return logits
