"""What the last sync's lock says of the next one, as this working directory reads it.

Light: `check` hashes what it names before deciding whether anything must be parsed.
"""

from __future__ import annotations

from pathlib import Path

from omni_port.patches import lockfile
from omni_port.sources.config import Config


def locked_upstream(config: Config, generated: Path) -> str:
    """The upstream a sync without --upstream takes (``lockfile.default_upstream``); ""
    without a lock."""
    lock = lockfile.read_or_none(generated)
    if lock is None:
        return ""
    configured = config.recorded_spec(config.upstream)
    return config.given_spec(lockfile.default_upstream(lock, configured))


def locked_transplants(config: Config, generated: Path) -> tuple[Path, ...]:
    """The transplant inputs of the last sync: the same blocks join the copies when
    `resolve` or `continue` runs the sync, and an edited one is another check."""
    lock = lockfile.read_or_none(generated)
    labels = [label for label, _ in lock.transplants] if lock is not None else []
    return tuple(config.path(label) for label in labels)
