from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def run(self, batch):
        out = self.model(batch)
        with self.record("post"):
            if self.aux:
                out, aux = out
            out = self.post(out)
            self.log(out)
        return out
