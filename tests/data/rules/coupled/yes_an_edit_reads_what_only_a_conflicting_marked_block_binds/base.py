from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def finish(self, batch):
        output = self.pack(batch)
        self.flush()
        self.sync()
        result = self.wrap(output)
        return result
