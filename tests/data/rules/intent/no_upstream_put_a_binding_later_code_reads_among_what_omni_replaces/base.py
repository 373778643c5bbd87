from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def finish(self, batch):
        output = self.pack(batch)
        if batch.grammar:
            output = self.mask(output)
        sampled = self.sample(output)

        def propose(ids):
            return self.drafter(ids)

        self.done(propose)
        return sampled
