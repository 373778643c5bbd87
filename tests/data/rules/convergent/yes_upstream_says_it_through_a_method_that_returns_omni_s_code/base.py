from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def prepare(self, batch):
        buffers = self.buffers()
        preprocess(batch, self.cache_config, self.model.get_copy_func(), buffers)
        return buffers
