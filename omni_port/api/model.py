"""``api.model``: the records, enums and the one error the API's functions take and return.

Defined where the stages share them (``omni_port.model``, ``omni_port.errors``); named
here so that a caller of the API (the command line) imports nothing else.
"""

from __future__ import annotations

from omni_port.errors import BadInput
from omni_port.model import (
    Block,
    BlockKind,
    Candidate,
    Chunk,
    Code,
    Copy,
    Finding,
    Layout,
    ModulePatches,
    PatchSet,
    Placement,
    RegionKind,
    Report,
    Resolution,
    Severity,
    Status,
    Stmt,
)
from omni_port.sources.config import Config

__all__ = [
    "BadInput",
    "Block",
    "BlockKind",
    "Candidate",
    "Chunk",
    "Code",
    "Config",
    "Copy",
    "Finding",
    "Layout",
    "ModulePatches",
    "PatchSet",
    "Placement",
    "RegionKind",
    "Report",
    "Resolution",
    "Severity",
    "Status",
    "Stmt",
]
