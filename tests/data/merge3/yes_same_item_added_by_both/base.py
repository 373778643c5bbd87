(a, b) = self.state
