from contextlib import nullcontext


def set_acc_forward_context(config, num_tokens=None):
    return nullcontext(config)
