from fakeacc.runner_v1 import NPUModelRunner
from fakeomni.outputs import OmniModelRunnerOutput


class R(NPUModelRunner):
    def execute_model(self, scheduler_output) -> "OmniModelRunnerOutput | None":
        if self.capture_experts:
            capturer = self.experts_capturer()
            if capturer is not None and hasattr(capturer, "finalize"):
                capturer.finalize()
        for request in scheduler_output.requests:  # Omni-specific: all requests
            self.track(request)
        return self.run(scheduler_output)
