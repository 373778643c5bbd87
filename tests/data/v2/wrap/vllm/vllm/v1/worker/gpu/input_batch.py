# Stand-ins of vLLM's V2 helpers, written for omni-port's tests.


class InputBatch:
    @classmethod
    def make(cls, scheduler_output, batch_desc):
        return cls()

    @classmethod
    def make_dummy(cls, batch_desc):
        return cls()
