# Stand-ins of vLLM's V2 helpers, written for omni-port's tests.


class BlockTables:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
