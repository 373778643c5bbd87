from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        output = self.model(batch)
        if output is None:
            # ---------- Omni-new ----------
            self.omni_log(batch)
            return None
        # ---------- Omni-new ----------
        return output
