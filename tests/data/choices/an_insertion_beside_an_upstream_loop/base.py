from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def execute(self, batch):
        self.prepare(batch)
        for req_id in batch.req_ids:
            self.requests[req_id].step()
        return self.run(batch)
