class R:
    def run(self, x):
        with ctx("prepare input"):
            with self.sync():
                if x:
                    y = 1
                    #  ------ Omni-new ------
                    y += self.extra(y)
                    #  ------ Omni-new ------
                else:
                    try:
                        y = 2
                    except ValueError:
                        #  ------ Omni-new ------
                        y = 3
                        #  ------------------------------
        return y
