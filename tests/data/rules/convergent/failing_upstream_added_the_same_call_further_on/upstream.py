from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self.prepare(batch)
        output = self.run(batch)
        self.log(output)
        self.finalize_connector()
        return output
