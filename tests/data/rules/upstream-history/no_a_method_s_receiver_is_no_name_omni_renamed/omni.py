from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        hidden = self.run(batch)
        index = torch.from_numpy(batch.index).to(hidden.device, non_blocking=True)
        return hidden, hidden[index]
