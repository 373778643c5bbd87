"""``python -m omni_port`` runs the command line."""

from omni_port.cli import run

run()
