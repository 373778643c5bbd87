from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def update(self, out):
        self.seen.update(out.ids)
        for req_id in out.finished:
            self.requests.pop(req_id)
            self.buffers.pop(req_id, None)
            self.logprobs.pop(req_id, None)
        self.batch.refresh()
        return None
