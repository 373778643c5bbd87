from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute(self, batch):
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.omni_step(batch)
        # ---------- Omni-new ----------
        for req_id in batch.req_ids:
            self.requests[req_id].step()
        return self.run(batch)
