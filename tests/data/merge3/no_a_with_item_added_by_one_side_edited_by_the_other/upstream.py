with record("forward"), forward_context(metadata, num_tokens=padded), self.connector_output() as output:
    hidden = self.model(input_ids)
