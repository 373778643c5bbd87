prepare_cache(  # imported by name
    state,
    self.cache_config,
    buffers.prepare,
)
