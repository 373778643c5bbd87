# ---------- Omni-new ----------
payload = self.collect_payload(req_ids)
output = OmniRunnerOutput(
    req_ids=req_ids,
    tokens=tokens,
    pooler_output=payload,
    experts=None,
)
output.extra = self.extra
# ---------- Omni-new ----------
