from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def prepare(self, batch):
        buffers = self.buffers()
        preprocess(batch, self.cache_config, self._get_copy_funcs(), buffers)
        return buffers
