from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def forward(self, batch):
        self.prepare(batch)
        if self.ready:
            self.flush(batch)
            # ---------- Omni-new ----------
            self.omni_after_first_flush(batch)
            # ---------- Omni-new ----------
            self.flush(batch)
            self.flush(batch)
        self.finish(batch)
