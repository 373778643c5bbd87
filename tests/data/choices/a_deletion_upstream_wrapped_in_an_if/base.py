from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        self.flush(y)
        return y
