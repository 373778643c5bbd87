from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        self.omni_hook(batch)
        output = self.model(batch)
        if output is None:
            return None
        return output
