from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        hidden = self.run(batch)
        index = to_device(batch.index, device=self.device)
        return hidden, hidden[index]
