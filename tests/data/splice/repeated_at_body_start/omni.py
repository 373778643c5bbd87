from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def forward(self, batch):
        self.flush(batch)
        # ---------- Omni-new ----------
        self.omni_between_flushes(batch)
        # ---------- Omni-new ----------
        self.flush(batch)
        with self.timer(batch):
            self.hidden = self.encode(batch)
            self.flush(batch)
            self.logits = self.head(batch)
