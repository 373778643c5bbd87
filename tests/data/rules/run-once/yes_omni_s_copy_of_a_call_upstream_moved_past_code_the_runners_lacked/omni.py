import numpy as np

from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        self.update(batch)
        self.start_dump()
        ids = self.batch.ids
        tokens = [batch.tokens[i] for i in ids]
        arr = np.array(tokens)
        # ---------- Omni-new ----------
        arr = self.omni_prepare(arr)
        # ---------- Omni-new ----------
        return self.run(arr)
