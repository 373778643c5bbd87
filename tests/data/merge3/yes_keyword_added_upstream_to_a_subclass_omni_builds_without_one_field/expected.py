out = OmniOutput(req_ids=ids, stats=s)
