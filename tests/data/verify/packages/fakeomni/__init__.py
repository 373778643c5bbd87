"""Synthetic omni package for omni-port tests."""
