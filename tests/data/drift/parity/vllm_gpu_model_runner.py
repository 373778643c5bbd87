class GPUModelRunner:
    def __init__(self, config):
        self.config = config
        self.model = None

    def _model_forward(self, input_ids, **kwargs):
        model = self.model
        return model(input_ids, **kwargs)
