with forward_context(metadata, num_tokens=padded, sinks=True):
    hidden = self.model(input_ids)
