from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        self.prepare(batch)
        self.record_stats()
        self.launch(batch)
        return self.result
