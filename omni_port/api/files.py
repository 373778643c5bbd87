"""``api.files``: the workspace on disk as a caller of the API reads and writes it: the
configuration, the lock, the transaction a command's writes are staged in, the download
cache and the byte-exact text I/O. Light: a command answered from the check cache loads
nothing more."""

from __future__ import annotations

from omni_port.patches import lockfile
from omni_port.pyast import memo
from omni_port.sources import fetch, transaction
from omni_port.sources.config import (
    NO_TABLE,
    built_in_defaults,
    config_file,
    load,
    pinned,
    with_platform,
)
from omni_port.sources.platform import PLATFORMS
from omni_port.sources.textio import encode, remove_dead_temps_under, sha256, write_atomic
from omni_port.sources.upstream import Progress, cached_member, default_cache

#: The platforms a workspace may keep runners for, as ``--platform`` names them.
PLATFORM_NAMES = tuple(PLATFORMS)

__all__ = [
    "NO_TABLE",
    "PLATFORM_NAMES",
    "Progress",
    "built_in_defaults",
    "cached_member",
    "config_file",
    "default_cache",
    "encode",
    "fetch",
    "load",
    "lockfile",
    "memo",
    "pinned",
    "remove_dead_temps_under",
    "sha256",
    "transaction",
    "with_platform",
    "write_atomic",
]
