from fakeacc.groups import get_group, group, has_group
from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        if has_group():
            meta = batch.meta
            if meta is not None:
                group().handle(meta)
        # ---------- Omni-new ----------
        output = self.run(tokens)
        return output
