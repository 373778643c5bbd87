import time

from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        output = self.run(batch)

        if self.config.timing_enabled and hasattr(self, "_start"):
            self.sync()
            output.ms = (time.perf_counter() - self._start) * 1000.0

        if self.eplb:
            self.eplb.step()
        return output
