(
    a,
    b,
    _batch_desc,
    extra,
) = self.state
