"""Synthetic accelerator package for omni-port tests."""
