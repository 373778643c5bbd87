"""``api.patches``: the patch files and generated trees as a command writes them: rendered,
planned against what is on disk, diffed; hand edits of generated runners found."""

from __future__ import annotations

from omni_port.catalog import describe, markdown
from omni_port.extract.listing import extracted_blocks
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import (
    Changes,
    edit_finding,
    existing,
    hand_edits,
    plan,
    read_patch_set,
    unified_diff,
)
from omni_port.sync.pipeline import GENERATED

__all__ = [
    "GENERATED",
    "Changes",
    "describe",
    "edit_finding",
    "existing",
    "extracted_blocks",
    "hand_edits",
    "markdown",
    "plan",
    "read_patch_set",
    "render_patch_set",
    "unified_diff",
]
