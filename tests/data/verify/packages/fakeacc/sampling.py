def apply_grammar_bitmask(scheduler_output, grammar_output, logits):
    return logits
