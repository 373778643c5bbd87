class NPUModelRunner:
    def forward(self, batch):
        self.prepare(batch)
        if self.ready:
            self.flush(batch)
            self.flush(batch)
            self.flush(batch)
        self.finish(batch)
