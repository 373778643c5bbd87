"""omni-port: keep a downstream fork's edits alive across upstream upgrades."""

from __future__ import annotations

__version__ = "0.1.0"
#: The generator's name in headers, locks and patch files.
TOOL = f"omni-port {__version__}"
