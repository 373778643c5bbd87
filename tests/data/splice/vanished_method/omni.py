from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def load_model(self):
        self.model = self.loader.load(self.config)
        # ---------- Omni-new ----------
        self.talker = getattr(self.model, "talker", None)
        # ---------- Omni-new ----------
        self.sampler = self.loader.sampler(self.config)
        self.warm_up()
