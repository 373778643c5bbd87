KINDS = {"prefill", "omni_audio", "decode"}
