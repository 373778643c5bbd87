with record("forward"), forward_context(metadata, num_tokens=padded):
    hidden = self.model(input_ids)
