from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        output = self.model(
            batch,
            # ---------- Omni-new ----------
            extra=self.omni_extra,
            # ---------- Omni-new ----------
        )
        if output is None:
            return None
        return output
