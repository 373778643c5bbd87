from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, batch):
        output = self.sample_tokens(batch)
        # ---------- Omni-new ----------
        result = OmniResult(output, batch.ids, self.multimodal_outputs)
        # ---------- Omni-new ----------
        if self.timing and self.timing.enabled and hasattr(self, "start"):
            self.record_time()
        return result
