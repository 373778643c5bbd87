"""``api.writing``: what commands write, in the command's transaction: output trees staged
(published together when the command commits) or under --check only compared, patch sets
saved, and generated runners a maintainer edited by hand kept from being overwritten."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from omni_port import TOOL
from omni_port.errors import BadInput
from omni_port.model import Code, Finding, PatchSet
from omni_port.patches import lockfile, written
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import Changes, edit_finding, existing, hand_edits, plan, unified_diff
from omni_port.report import shown
from omni_port.sources import transaction
from omni_port.sources.textio import encode, remove_dead_temps_under

__all__ = [
    "Written",
    "keep_hand_edits",
    "publish",
    "save_patches",
    "staging",
    "would_change",
    "write_tree",
]


@dataclass(frozen=True, slots=True)
class Written:
    """What writing an output tree changes (staged, or under --check only compared)."""

    changes: Changes
    #: Under --check, one OP304 per file that would change.
    findings: list[Finding] = field(default_factory=list)
    #: The unified diff of what changes, when asked for ("" otherwise).
    diff: str = ""


def staging() -> transaction.Transaction:
    """The running command's transaction (the CLI opens one for every command that
    writes); RuntimeError outside one."""
    found = transaction.current()
    if found is None:
        raise RuntimeError("a command that writes runs in_workspace(writes=True)")
    return found


def write_tree(
    root: Path,
    files: Mapping[str, bytes],
    stale: Iterable[str],
    check: bool = False,
    diff: bool = False,
) -> Written:
    """Stage a tree of outputs (``files`` by path relative to ``root``; ``stale``: files of
    the tree that go when ``files`` lacks them) in the command's transaction, or with
    ``check`` only compare it; ``diff`` asks for the unified diff, taken before anything is
    staged. A generated tree's write is recorded in the workspace's state too
    (``patches.written``), even when no file of it changes."""
    changes = plan(root, files, stale)
    shown_diff = unified_diff(root, files, changes) if diff else ""
    if check:
        return Written(changes, would_change(root, changes), shown_diff)
    staged = staging()
    if not changes.clean:
        staged.write_tree(root, files, changes.changed)
        for rel in changes.removed:
            staged.remove(root / rel)
    else:
        # Temp files a killed run left go even when nothing else changes here.
        remove_dead_temps_under(root, files)
    # A generated tree (it has a lock) is recorded as written in this checkout, in the
    # same transaction: what tells a later hand edit from a lock a pull replaced.
    record = written.next_record(staged.root, root, files) if lockfile.LOCK_NAME in files else None
    if record is not None:
        staged.write(*record)
    return Written(changes, [], shown_diff)


def would_change(root: Path, changes: Changes) -> list[Finding]:
    """OP304 for every file a write would rewrite or remove."""
    rows = [(rel, "rewrite") for rel in changes.changed]
    rows += [(rel, "remove") for rel in changes.removed]
    return [
        Finding(Code.OP304, shown(root / rel), 1, f"would {verb} it") for rel, verb in sorted(rows)
    ]


def save_patches(directory: Path, patch_set: PatchSet) -> Changes:
    """Stage a patch set: changed files written, files of pieces that are gone removed."""
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    return write_tree(directory, files, existing(directory, "*/*.patch")).changes


def keep_hand_edits(generated: Path, files: Mapping[str, bytes], discard: bool) -> list[str]:
    """Refuse to overwrite a generated runner edited since sync wrote it, as git refuses to
    check out over local changes: BadInput (OP207), one finding per edited file at its
    first edited line, naming the regions and the two ways on.

    With ``discard`` the edits are dropped, but not lost: each edited file is copied into
    ``.omni-port/discarded/`` of the workspace in the same transaction; returns those
    copies' paths.
    """
    edits = hand_edits(generated, lockfile.read_or_none(generated), files)
    if not edits:
        return []
    if not discard:
        raise BadInput([edit_finding(shown(generated / e.rel), e, refused=True) for e in edits])
    staged = staging()
    folder = transaction.state_dir(staged.root) / "discarded" / time.strftime("%Y%m%d-%H%M%S")
    kept = []
    for edit in edits:
        copy = folder / generated.name / edit.rel
        staged.write(copy, (generated / edit.rel).read_bytes())
        kept.append(shown(copy))
    return kept


def publish() -> None:
    """Publish everything the command staged, as one transaction: before it says what it
    wrote (the CLI publishes what is left when the command returns)."""
    staging().commit()
