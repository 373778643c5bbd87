from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def finish(self, batch):
        output = self.pack(batch)
        if batch.grammar:
            output = self.mask(output)
        sampled = self.sample(output)
        fits = self.fits(batch)

        def propose(ids):
            if not fits:
                return None
            return self.drafter(ids)

        self.done(propose, fits)
        return sampled
