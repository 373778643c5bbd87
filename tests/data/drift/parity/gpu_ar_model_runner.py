from fakevllm.runner import GPUModelRunner


class GPUARModelRunner(GPUModelRunner):
    def __init__(self, config):
        super().__init__(config)
        self.sampling_args = {}

    def _model_forward(self, input_ids, **kwargs):
        model = self.model
        return model(input_ids, sampling=self.sampling_args, **kwargs)

    def capture_cuda_graphs(self):
        self.cuda_graph_pool = self.capture()
