KINDS = {"prefill", "spec_decode", "omni_audio", "decode"}
