batch, sync = self._dispatch(num_reqs=num_reqs, use_eager=eager)
