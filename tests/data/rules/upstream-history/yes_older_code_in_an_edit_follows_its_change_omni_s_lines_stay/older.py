from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def update(self, out):
        self.seen.update(out.ids)
        for req_id in out.finished:
            self.requests.pop(req_id, None)
            self.logprobs.pop(req_id, None)
        self.batch.refresh()
        return None
