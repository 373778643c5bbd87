from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def run(self, batch):
        out = self.model(batch)
        if self.aux:
            out, aux = out
        with self.timer("post"):
            out = self.post(out)
            self.log(out)
        return out
