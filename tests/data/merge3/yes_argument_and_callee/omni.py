prepare_cache(  # imported by name
    state,
    self.cache_config,
    self._copy_buffers(),
)
