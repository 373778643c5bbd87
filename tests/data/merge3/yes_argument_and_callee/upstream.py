helpers.prepare_cache(state, self.cache_config, buffers.prepare)
