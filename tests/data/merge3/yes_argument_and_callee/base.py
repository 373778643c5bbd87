helpers.prepare_cache(state, self.cache_config, self._copy_buffers())
