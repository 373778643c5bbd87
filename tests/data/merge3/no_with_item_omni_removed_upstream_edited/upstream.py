with record("forward", sync=True), forward_context(metadata, num_tokens=padded):
    hidden = self.model(input_ids)
