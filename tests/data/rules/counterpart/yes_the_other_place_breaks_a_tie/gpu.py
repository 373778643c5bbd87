from fakegpu.runner import GPUModelRunner


class G(GPUModelRunner):
    def forward(self, batch):
        self.prepare(batch)
        self.record_stats()
        self.register_outputs(batch)
        self.launch(batch)
        return self.result
