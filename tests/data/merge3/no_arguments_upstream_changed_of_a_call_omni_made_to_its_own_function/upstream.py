batch, sync = dispatch(self.manager, num_reqs, need_eager=eager, parallel_config=self.parallel_config)
