from fakeacc.runner_v1 import NPUModelRunner
from fakeomni.outputs import OmniOutput


class R(NPUModelRunner):
    """An omni runner."""

    def load_model(self):
        NPUModelRunner.load_model(self)
        self.talker = getattr(self.model, "talker", None)

    #  ---------------- Omni-new ----------------
    def _payload(self, index):
        return {"hidden": self.hidden[index]}

    def _payloads(self, count):
        return [self._payload(i) for i in range(count)]
    #  ---------------- Omni-new ----------------

    def sample_tokens(self, grammar_output):
        output = self.kv_output
        self.kv_output = None
        if self.state is None:
            return None
        scheduler_output, logits, multimodal = self.state  # Omni-specific
        self.state = None
        sampled = self.sampler(logits)
        return OmniOutput(sampled, output, self._payloads(len(sampled)))
