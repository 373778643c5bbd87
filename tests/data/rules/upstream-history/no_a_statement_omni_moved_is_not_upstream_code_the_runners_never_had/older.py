from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        self.log(tokens)
        pad = self.pad_mode()
        self.warm(tokens)
        slots = self.slots(tokens, pad)
        return slots
