class NPUModelRunner:
    def forward(self, batch):
        self.flush(batch)
        self.flush(batch)
        with self.timer(batch):
            self.hidden = self.encode(batch)
            self.flush(batch)
            self.logits = self.head(batch)

    def untouched(self):
        return 0
