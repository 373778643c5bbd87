from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def execute_model(self, scheduler_output) -> "ModelRunnerOutput | None":
        if self.capture_experts:
            capturer = self.experts_capturer()
            if capturer is not None:
                capturer.clear_buffer()
            else:
                self.logger.warning("capturer missing")
        for request in scheduler_output.requests:
            self.track(request)
        return self.run(scheduler_output)
