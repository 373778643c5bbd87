from fakeacc.runner import NPUModelRunner


class NPUARModelRunner(NPUModelRunner):
    def __init__(self, config):
        super().__init__(config)
        self.kv_transfer_manager = None

    def _model_forward(self, input_ids, **kwargs):
        model = self.model
        # ------------------------------ Omni-new ------------------------------
        self.kv_transfer_manager.wait_for_layers(input_ids)
        # ------------------------------ Omni-new ------------------------------
        return model(input_ids, **kwargs)
