class ACLGraphWrapper:
    def __init__(self, runnable, config):
        self.runnable = runnable
        self.config = config

    def __call__(self, *args):
        return self.runnable(*args)
