class NPUARModelRunner(NPUModelRunner):
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        if self.execute_model_state is not None:
            raise RuntimeError("sample_tokens() must follow execute_model()")

        # ---------------------------------------Omni-new----------------------------------------------
        if not getattr(self, "_warmup_cleared", False):
            self._warmup_cleared = True
            self.model.clear_warmup()
        finished = getattr(scheduler_output, "finished_requests_needing_kv_transfer", {})
        for req_id, data in finished.items():
            extra = self.model.transfer_metadata(req_id)
            if extra:
                data.setdefault("custom_metadata", {}).update(extra)
        self.kv_extracted_req_ids = self.kv_transfer_manager.handle_finished(
            finished_reqs=finished,
            kv_caches=self.kv_caches,
            block_size=self.cache_config.block_size,
            request_id_resolver=self._resolve_global_request_id,
        )
        # ---------------------------------------Omni-new----------------------------------------------

        num_scheduled_tokens = scheduler_output.total_num_scheduled_tokens
        # ---------------------------------------Omni-new----------------------------------------------
        self.omni_step(scheduler_output)
        # ---------------------------------------Omni-new----------------------------------------------
        return num_scheduled_tokens
