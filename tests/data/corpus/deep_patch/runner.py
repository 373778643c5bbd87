from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.omni_hook(batch)
        # ---------- Omni-new ----------
        output = self.model(batch)
        if output is None:
            return None
        return output
