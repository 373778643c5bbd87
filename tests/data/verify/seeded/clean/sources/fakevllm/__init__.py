"""Synthetic stand-in for vLLM, written for omni-port's tests; read as text, never imported."""
