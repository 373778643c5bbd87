out = Output(req_ids=ids, extra=x, stats=s)
