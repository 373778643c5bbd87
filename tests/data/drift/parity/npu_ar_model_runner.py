from fakeacc.runner import NPUModelRunner


class NPUARModelRunner(NPUModelRunner):
    def __init__(self, config):
        super().__init__(config)
        self.kv_transfer_manager = None

    def _model_forward(self, input_ids, **kwargs):
        return self.model(input_ids, **kwargs)
