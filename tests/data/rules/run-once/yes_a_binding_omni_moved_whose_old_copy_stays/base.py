from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        ready = self.flush()
        self.log(tokens)
        out = self.run(tokens)
        self.save(out)
        return out if ready else None
