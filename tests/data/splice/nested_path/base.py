from fakeacc.profiling import record
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
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
                    logits = self.model.compute_logits(sample)
        return logits
