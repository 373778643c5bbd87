"""What sync wrote to a generated tree in this checkout: the local record that tells a hand
edit from a file a pull left alone.

The lock says what the sync that wrote the *committed* tree wrote. A ``git pull``,
``checkout`` or ``merge`` can bring a new lock without the same generated files (they are
not committed everywhere, as in this repository, or not in the same commit), and a file
that is a previous sync's own output then differs from the lock without anyone having
edited it. So every write of a generated tree also records the sha256 of each file it
wrote, in the workspace's state (``.omni-port/written/<tree>.json``, beside the journal:
never committed, present whether or not the workspace is a git checkout). A file is as
sync wrote it when it holds what any write the record lists wrote there, or what the lock
names. Without a record (a fresh clone, a tree outside the workspace, a record written by
no version yet) only the lock is known: a file that differs from it is called edited,
although it may be an older sync's output (the finding says so).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from omni_port.patches.lockfile import LOCK_NAME, Lock
from omni_port.sources.textio import safe_relative, sha256
from omni_port.sources.transaction import STATE_DIR

#: The folder of the records in the workspace's state directory.
RECORD_DIR = "written"
#: How many writes of one tree the record keeps (newest first): a file restored from an
#: earlier write of this checkout (a branch switched back) is still no hand edit.
KEPT_WRITES = 8

#: One write: (sha256 of the lock it wrote, output path -> sha256 of the bytes written).
Write = tuple[str, Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class AsWritten:
    """What sync is known to have written to one generated tree."""

    #: Output path (relative to the tree) -> every sha256 a sync wrote there: this
    #: checkout's recorded writes and the lock's outputs.
    hashes: Mapping[str, frozenset[str]]
    #: Whether the record was read (False: only the lock's hashes are known).
    recorded: bool

    def wrote(self, rel: str, data: bytes) -> bool:
        """Whether ``data`` is what a sync wrote at ``rel``: the one test of "as sync wrote
        it" (no hand edit) that every command and the runtime switch apply."""
        return sha256(data) in self.hashes.get(rel, frozenset())


class Held(enum.Enum):
    """What an output of a generated tree holds, against what sync wrote there."""

    #: What the lock names: the tree the lock describes.
    LOCKED = "locked"
    #: What an earlier write of this checkout put there, not what the lock names (a pull
    #: or checkout replaced the lock): no hand edit; `sync` rewrites it.
    EARLIER = "earlier"
    #: What no sync is known to have written: a hand edit, which `continue` takes.
    EDITED = "edited"
    #: Nothing (or nothing readable): `sync` writes it.
    MISSING = "missing"


def held(tree: Path, lock: Lock) -> dict[str, Held]:
    """What each output ``lock`` lists holds in ``tree`` (the runtime switch and the gates
    read it: only LOCKED is the tree the lock describes). A path that names a file outside
    ``tree`` is MISSING: a lock is a file anyone can edit."""
    known = as_written(tree, lock)
    found = {}
    for rel, digest in sorted(lock.outputs.items()):
        try:
            data = (tree / rel).read_bytes() if safe_relative(rel) else None
        except OSError:
            data = None
        if data is None:
            found[rel] = Held.MISSING
        elif sha256(data) == digest:
            found[rel] = Held.LOCKED
        else:
            found[rel] = Held.EARLIER if known.wrote(rel, data) else Held.EDITED
    return found


def as_written(tree: Path, lock: Lock | None) -> AsWritten:
    """What sync wrote to ``tree``: the record of this checkout's writes (found in the
    state directory of the nearest folder above ``tree`` that holds one) and ``lock``'s
    outputs. Never raises: an unreadable record counts as none."""
    found = find_record(tree)
    writes = _read(found) if found is not None else None
    hashes: dict[str, set[str]] = {}
    for _, outputs in writes or ():
        for rel, digest in outputs.items():
            hashes.setdefault(rel, set()).add(digest)
    for rel, digest in (lock.outputs if lock is not None else {}).items():
        hashes.setdefault(rel, set()).add(digest)
    frozen = {rel: frozenset(digests) for rel, digests in hashes.items()}
    return AsWritten(frozen, writes is not None)


def record_path(root: Path, tree: Path) -> Path | None:
    """Where the workspace at ``root`` records what its commands wrote to ``tree``; None
    when ``tree`` is not below ``root`` (nothing is recorded then)."""
    try:
        rel = tree.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    if not safe_relative(rel):
        return None
    return root / STATE_DIR / RECORD_DIR / f"{rel}.json"


def find_record(tree: Path) -> Path | None:
    """This checkout's record of ``tree``: in the nearest folder above it whose state
    directory records it (as git finds ``.git``); None when none does."""
    resolved = tree.resolve()
    for folder in resolved.parents:
        path = record_path(folder, resolved)
        if path is not None and path.is_file():
            return path
    return None


def next_record(root: Path, tree: Path, files: Mapping[str, bytes]) -> tuple[Path, bytes] | None:
    """The record to stage when the workspace at ``root`` writes ``files`` (a whole
    generated tree, its lock among them) to ``tree``: the path and its new bytes; None when
    the record already lists that write first, or ``tree`` is outside the workspace."""
    path = record_path(root, tree)
    if path is None:
        return None
    lock = files.get(LOCK_NAME, b"")
    outputs = {rel: sha256(data) for rel, data in sorted(files.items()) if rel != LOCK_NAME}
    write: Write = (sha256(lock), outputs)
    before = (_read(path) if path.is_file() else None) or ()
    if before and before[0] == write:
        return None
    kept = [write, *(w for w in before if w != write)][:KEPT_WRITES]
    rel = path.relative_to(root / STATE_DIR / RECORD_DIR).as_posix().removesuffix(".json")
    return path, _render(rel, kept)


def _render(tree: str, writes: list[Write]) -> bytes:
    document = {
        "about": (
            f"what omni-port wrote to {tree}/ in this checkout, newest first; a file holding "
            "one of these is no hand edit. Local state: never committed."
        ),
        "tree": tree,
        "writes": [{"lock": lock, "outputs": dict(outputs)} for lock, outputs in writes],
    }
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _read(path: Path) -> tuple[Write, ...] | None:
    """The writes a record lists; None when it cannot be read as one."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        writes = []
        for row in document["writes"]:
            outputs = {str(rel): str(digest) for rel, digest in row["outputs"].items()}
            writes.append((str(row["lock"]), outputs))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return tuple(writes)
