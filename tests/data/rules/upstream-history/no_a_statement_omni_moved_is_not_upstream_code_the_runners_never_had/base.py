from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.log(tokens)
        separate = not all(g.backend.includes_update for g in self.groups)
        pad = self.pad_mode()
        self.warm(tokens)
        slots = self.slots(tokens, pad or separate)
        return slots
