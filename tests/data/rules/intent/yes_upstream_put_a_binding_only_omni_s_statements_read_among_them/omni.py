from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def finish(self, batch):
        output = self.pack(batch)
        # ---------- Omni-new ----------
        sampled = self.omni_payload(output)

        def propose(ids):
            return None

        # ---------- Omni-new ----------
        self.done(propose)
        return sampled
