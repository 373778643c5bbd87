KINDS = {"prefill", "decode"}
