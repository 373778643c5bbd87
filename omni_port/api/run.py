"""Sync and verify on values already loaded: the steps `sync`, `check` and `upgrade` share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from omni_port import TOOL
from omni_port.api.inputs import read_patches, with_members
from omni_port.errors import BadInput
from omni_port.gpu import transplant
from omni_port.model import Code, Finding, PatchSet, Placement, Upstream
from omni_port.patches import lockfile
from omni_port.patches.patchfile import INDEX_NAME, render_patch_set
from omni_port.pyast import memo
from omni_port.sources.textio import decode
from omni_port.sync.pipeline import GENERATED as GENERATED  # the marker generated files carry
from omni_port.sync.pipeline import Options as SyncOptions
from omni_port.sync.pipeline import SyncResult as SyncResult  # what a sync gives
from omni_port.sync.pipeline import sync as sync_patch_set
from omni_port.verify import checks, trials
from omni_port.verify.conflicts import conflict_findings

#: The command recorded in headers and the lock when the caller names none.
SYNC_COMMAND = "omni-port sync"


@dataclass(frozen=True, slots=True)
class Synced:
    """A sync: the generated files and what happened to every block."""

    result: SyncResult
    #: Transplanted blocks merged into the patches (empty without transplant inputs).
    merged: transplant.Merged | None = None

    @property
    def placements(self) -> tuple[Placement, ...]:
        """Every block's outcome, transplanted blocks with no copy included."""
        orphans = self.merged.orphans if self.merged is not None else ()
        return (*self.result.placements, *orphans)

    @property
    def findings(self) -> tuple[Finding, ...]:
        extra = self.merged.findings if self.merged is not None else ()
        return (*self.result.findings, *extra)


@dataclass(frozen=True, slots=True)
class Given:
    """What a sync reads beside the patch set and the upstream, each optional."""

    #: The patch files as read: their digest goes into headers and the lock (rendered
    #: from the patch set when not given).
    patch_files: Mapping[str, str] | None = None
    #: Transplant inputs: blocks added to the copies.
    transplants: Sequence[transplant.Extra] = ()
    #: The catalog's Location lines by block id (``catalog_locations``): constraints on places.
    locations: Mapping[str, str] = field(default_factory=dict)
    #: The modules to generate, by file name (empty: every one); the others are read
    #: all the same, for what their marked blocks declare omni's.
    only: frozenset[str] = frozenset()
    #: A conflict lists only the candidates that work (``sync.offers``), as every command
    #: shows them; False keeps every candidate the engine ranked: whether the maintainers'
    #: place is among them is what the bench measures of the engine.
    offer: bool = True


def sync_patches(
    patches: PatchSet,
    upstream: Upstream,
    command: str = SYNC_COMMAND,
    given: Given | None = None,
    tool: str = TOOL,
) -> Synced:
    """Generate every module of ``patches`` on ``upstream`` with what else is ``given``;
    writes nothing. ``tool`` names the generator in headers and the lock.

    Raises BadInput (OP004) when the upstream lacks a class the copies come from.
    """
    given = given or Given()
    files = (
        dict(given.patch_files)
        if given.patch_files is not None
        else render_patch_set(patches, tool)
    )
    # A conflict offers only the candidates that work: each tried, verify's say included.
    judge = trials.Judge() if given.offer else None
    options = SyncOptions(
        tool, command, locations=dict(given.locations), judge=judge, only=given.only
    )
    with memo.run():
        if not given.transplants:
            upstream = with_members(upstream, patches)
            return Synced(sync_patch_set(patches, files, upstream, options))
        merged = transplant.merge(patches, given.transplants)
        upstream = with_members(upstream, merged.patches)
        options = replace(options, transplants=tuple(merged.inputs))
        result = sync_patch_set(merged.patches, files, upstream, options)
    return Synced(result, merged)


def verify_files(
    files: Mapping[str, bytes],
    placements: Sequence[Placement],
    patches: PatchSet,
    context: checks.Context,
) -> list[Finding]:
    """Static verification of generated modules (file name -> bytes) placed as given."""
    modules = {
        name: decode(data, name).text for name, data in files.items() if name.endswith(".py")
    }
    with memo.run():
        overrides = checks.overrides_of(patches)
        resolved = checks.resolved_blocks(patches)
        blocks = checks.blocks_of(patches)
        findings = checks.verify(modules, placements, overrides, context, resolved, blocks)
    # A conflict left in a module is an error of its own: the runner lacks that block.
    return [*conflict_findings(modules), *findings]


def read_transplants(directories: Sequence[Path], shown: Sequence[str]) -> list[transplant.Extra]:
    """Every transplant input, read like a patch set; BadInput (exit 2) when one is not."""
    extras = []
    for directory, label in zip(directories, shown, strict=True):
        index = directory / INDEX_NAME
        if not index.is_file():
            message = (
                "no transplant patch set here; write one with "
                "`omni-port gpu-delta SOURCES --parity NPU_SOURCES --transplant DIR`"
            )
            raise BadInput.at(Code.OP204, str(index), 0, message)
        patch_set, files = read_patches(directory)
        extras.append(transplant.Extra(label, lockfile.patches_digest(files), patch_set))
    return extras
