from fakeacc.profiling import profile_duration, record_function
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        with profile_duration("post process"):
            scale = self.config.scale
            logits = self.head(tokens) * scale
            probs = logits.softmax(-1)
        return probs
