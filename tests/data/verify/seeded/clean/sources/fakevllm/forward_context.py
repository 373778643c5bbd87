from contextlib import contextmanager


@contextmanager
def set_forward_context(attn_metadata, vllm_config, *, num_tokens=None, batch_descriptor=None):
    yield attn_metadata
