out = OmniOutput(req_ids=ids)
