output = RunnerOutput(req_ids=req_ids, tokens=tokens, pooler_output=[], experts=None)
