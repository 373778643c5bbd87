from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def load_weights(self):
        self.model = self.loader.load(self.config)
        self.sampler = self.loader.sampler(self.config)
        self.warm_up()
