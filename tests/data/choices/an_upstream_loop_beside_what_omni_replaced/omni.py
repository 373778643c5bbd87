from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def execute(self, batch):
        self.prepare(batch)
        capturer = self.capturer
        if capturer is not None:
            capturer.finish()
        for req_id in batch.req_ids:
            self.requests[req_id].step()
        return self.run(batch)
