class OmniOutput:
    pass


class OmniModelRunnerOutput:
    def __init__(self, **fields):
        self.__dict__.update(fields)
