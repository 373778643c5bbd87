(a, b, batch_desc) = self.state
