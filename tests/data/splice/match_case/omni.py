from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        match batch.kind:
            case "a":
                self.run_a(batch)
                # ---------- Omni-new ----------
                self.omni_a(batch)
                # ---------- Omni-new ----------
                self.finish(batch)
            case _:
                self.run_other(batch)
        return batch
