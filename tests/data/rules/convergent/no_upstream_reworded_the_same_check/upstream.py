import time

from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        output = self.run(batch)
        if self.config.need_timing and hasattr(self, '_start'):
            self.sync()
            output.ms = (time.perf_counter() - self._start) * 1000.0

        if self.eplb:
            self.eplb.step()
        return output
