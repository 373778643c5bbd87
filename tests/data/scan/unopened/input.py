class R:
    def __init__(self):
        self.a = 1
        self.b = 2
        #  -------------------------------------- Omni-new -------------------------------------------------

    def other(self):
        pass
