batch, sync = dispatch(self.manager, num_reqs, need_eager=eager)
