from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def update(self, scheduler_output):
        for req_id in scheduler_output.finished_req_ids:
            self.requests.pop(req_id, None)
        self.input_batch.refresh(scheduler_output)
        self.apply_sampled_tokens(scheduler_output)
        return self.finish(OmniRunner.update(self, scheduler_output), self.omni_stats)
