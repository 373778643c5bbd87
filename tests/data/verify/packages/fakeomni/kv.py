class OmniKVTransferManager:
    @classmethod
    def from_config(cls, config):
        return cls()

    def handle_finished(self, finished_reqs, request_id_resolver):
        return [request_id_resolver(r) for r in finished_reqs]
