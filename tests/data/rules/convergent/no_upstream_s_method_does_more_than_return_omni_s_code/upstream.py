from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def prepare(self, batch):
        buffers = self.buffers()
        preprocess(batch, self.cache_config, self._get_npu_copy_funcs(), buffers)
        return buffers

    def _get_npu_copy_funcs(self):
        funcs = self._get_copy_funcs()
        return tuple(funcs.values())
