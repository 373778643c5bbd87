KINDS = {"prefill", "spec_decode", "decode"}
