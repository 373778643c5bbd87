from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.omni_hook(batch)
        # ---------- Omni-new ----------
        return self.model(batch)
