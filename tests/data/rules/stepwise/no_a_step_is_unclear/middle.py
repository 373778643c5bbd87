from fakeacc.profiling import profile_duration, record_function
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        with record_function("post process"):
            if self.sharded:
                tokens = self.gather(tokens)
            logits = self.head(tokens, temperature=self.temperature)
            probs = logits.softmax(dim=-1)
        return probs
