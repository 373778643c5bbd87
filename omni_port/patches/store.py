"""The file-system side of patch sets and output trees: read them, and compare a tree with
what a command would write (the writing is ``sources.transaction``'s)."""

from __future__ import annotations

import difflib
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code, Finding, PatchSet
from omni_port.patches import validate, written
from omni_port.patches.lockfile import LOCK_NAME, Lock
from omni_port.patches.patchfile import INDEX_NAME, build_module, parse_index, parse_piece
from omni_port.sources.textio import decode, read_source, safe_relative
from omni_port.sources.transaction import STATE_DIR


def read_patch_set(directory: Path, strict: bool = True) -> PatchSet:
    """Read a patches directory through its index.

    Not ``strict``, it reads what a maintainer decided (titles, resolutions, adoptions) for
    a re-extraction that replaces the code anyway: code that does not parse, a repeated id
    or a block of no copied member are let through; a header that cannot be read is not.

    Raises BadInput: OP204 without an index, OP202 for a piece file that is missing,
    OP201/OP203 for malformed files, OP002 for code that does not parse; OP201 for two
    pieces with one id or a block of a member the module does not copy (``validate``).
    """
    index_path = directory / INDEX_NAME
    if not index_path.is_file():
        raise BadInput.at(
            Code.OP204, str(index_path), 0, "no patch index here; run `omni-port extract` first"
        )
    index = read_source(index_path)
    modules = []
    every: list[validate.ReadPiece] = []
    for entry in parse_index(index.text, index.path):
        pieces: list[validate.ReadPiece] = []
        for line, name in entry.pieces:
            piece_path = directory / name
            if not piece_path.is_file():
                raise BadInput.at(Code.OP202, index.path, line, f"piece file {name} does not exist")
            source = read_source(piece_path)
            piece = parse_piece(source.text, source.path, code_must_parse=strict)
            pieces.append(validate.ReadPiece(piece, source.path, source.text, line))
        if strict:
            validate.check_members(pieces, index.path)
        every.extend(pieces)
        modules.append(build_module(entry, tuple(r.piece for r in pieces), index.path))
    if not modules:
        raise BadInput.at(Code.OP204, index.path, 1, "the index lists no module")
    if strict:
        validate.check_set(every)
    return PatchSet(tuple(modules))


@dataclass(frozen=True, slots=True)
class Changes:
    """What writing a tree of files would do."""

    #: Relative paths whose content would change or appear.
    changed: tuple[str, ...]
    #: Relative paths that would be removed (stale files of a previous run).
    removed: tuple[str, ...]
    #: Relative paths already up to date.
    unchanged: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.changed and not self.removed


def plan(root: Path, files: Mapping[str, bytes], stale_candidates: Iterable[str]) -> Changes:
    """Compare ``files`` with ``root``; candidates that exist but are not in ``files`` are stale.

    A file with the right bytes is unchanged whatever its mode: a rewrite would keep the
    mode anyway (``textio.kept_mode``).
    """
    changed, unchanged = [], []
    for rel, data in sorted(files.items()):
        target = root / rel
        if _current(target, data):
            unchanged.append(rel)
        else:
            changed.append(rel)
    # A candidate comes from a lock file a user may have edited: never reach outside root.
    stale = sorted(
        {
            rel
            for rel in stale_candidates
            if safe_relative(rel) and rel not in files and (root / rel).is_file()
        }
    )
    return Changes(tuple(changed), tuple(stale), tuple(unchanged))


def _current(target: Path, data: bytes) -> bool:
    """Whether ``target`` is a regular file holding ``data``."""
    try:
        if not stat.S_ISREG(target.stat().st_mode):
            return False
        return target.read_bytes() == data
    except OSError:
        return False


def existing(root: Path, pattern: str) -> list[str]:
    """Relative paths of files under ``root`` matching a glob pattern."""
    if not root.is_dir():
        return []
    return [p.relative_to(root).as_posix() for p in root.glob(pattern) if p.is_file()]


def unified_diff(root: Path, files: Mapping[str, bytes], changes: Changes) -> str:
    """The unified diff that applying ``changes`` would make, paths relative to ``root``."""
    out: list[str] = []
    for rel in changes.changed:
        target = root / rel
        old = _lines(target) if target.is_file() else []
        new = decode(files[rel], rel).text.splitlines(keepends=True)
        out.extend(_diff(old, new, f"a/{rel}", f"b/{rel}"))
    for rel in changes.removed:
        out.extend(_diff(_lines(root / rel), [], f"a/{rel}", "/dev/null"))
    return "".join(out)


def _lines(path: Path) -> list[str]:
    try:
        return decode(path.read_bytes(), str(path)).text.splitlines(keepends=True)
    except BadInput:
        return ["<binary or undecodable file>\n"]


def _diff(old: list[str], new: list[str], a: str, b: str) -> list[str]:
    lines = list(difflib.unified_diff(old, new, a, b))
    return [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    ]


# --- hand edits of a generated tree -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandEdit:
    """A file of a generated tree that differs from everything sync is known to have
    written there (``written.as_written``)."""

    #: Path relative to the tree's root.
    rel: str
    #: (first, last) 1-based lines of the file on disk that differ from what sync wrote;
    #: empty when that text is not at hand (the command would write other code there).
    regions: tuple[tuple[int, int], ...]
    #: Whether this checkout's record of what sync wrote was read; False when the file was
    #: compared with the lock alone, which a pull or checkout may have replaced.
    recorded: bool


def hand_edits(root: Path, lock: Lock | None, files: Mapping[str, bytes]) -> list[HandEdit]:
    """The files under ``root`` that a write of ``files`` would overwrite (or, with no
    ``files``, that a gate reads) although no sync wrote them as they are: neither this
    checkout's record of its writes nor ``lock`` names their sha256 (``written``).

    The files looked at are the lock's outputs and the recorded ones ``files`` would
    write. A missing file is no edit (nothing would be lost), nor is a file already holding
    what ``files`` would write. Where the new bytes are what a sync wrote (same inputs, so
    the same output), the edited regions are the lines that differ from them.
    """
    known = written.as_written(root, lock)
    candidates = set(lock.outputs if lock is not None else ()) | (set(known.hashes) & set(files))
    edits = []
    for rel in sorted(candidates):
        if not safe_relative(rel):
            continue
        try:
            actual = (root / rel).read_bytes()
        except OSError:
            continue
        new = files.get(rel)
        if known.wrote(rel, actual) or actual == new:
            continue
        same_inputs = new is not None and known.wrote(rel, new)
        regions = _regions(new, actual) if new is not None and same_inputs else ()
        edits.append(HandEdit(rel, regions, known.recorded))
    return edits


def earlier(root: Path, lock: Lock) -> list[str]:
    """The lock's outputs under ``root`` that hold what an earlier sync of this checkout
    wrote, not what ``lock`` names (``written.Held.EARLIER``)."""
    return [rel for rel, state in written.held(root, lock).items() if state is written.Held.EARLIER]


def earlier_finding(path: str, command: str) -> Finding:
    """OP406 for an output an earlier sync wrote under another lock: no hand edit, but not
    the tree the lock describes, so no gate passes it."""
    message = (
        f"holds what an earlier sync wrote, not what {LOCK_NAME} names (a pull or checkout "
        f"replaced the lock); run `{command or 'omni-port sync'}`"
    )
    return Finding(Code.OP406, path, 1, message)


def _regions(before: bytes, after: bytes) -> tuple[tuple[int, int], ...]:
    """Line ranges of ``after`` that differ from ``before`` (a deletion: the line after it)."""
    old = before.decode("utf-8", "replace").splitlines()
    new = after.decode("utf-8", "replace").splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    regions = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            first = min(j1 + 1, max(len(new), 1))
            regions.append((first, max(first, j2)))
    return tuple(regions)


def edit_finding(path: str, edit: HandEdit, refused: bool) -> Finding:
    """OP207 for a hand edit of a generated file (``path``, as shown), at its first
    edited line: what takes it (``continue``) and what drops it, and, when a command
    ``refused`` to overwrite it, that nothing was written. Judged by the lock alone (no
    record of this checkout's writes), it says so: a pulled lock can make a previous
    sync's output look edited."""
    drop = "`--discard-edits` (a copy goes to .omni-port/discarded/)"
    if not edit.regions and refused:
        why = (
            f"neither this checkout's record of its syncs nor {LOCK_NAME} names its sha256"
            if edit.recorded
            else f"{LOCK_NAME} names another sha256"
        )
        message = (
            f"edited since sync wrote it ({why}), and this "
            "command would write other code there (new patches or a new upstream): to keep "
            "the edits, take them first with `omni-port continue` (on the inputs of the last "
            f"sync), then run this command again; to drop them, {drop}; nothing was written"
        )
        return Finding(Code.OP207, path, 1, message + _unrecorded(edit))
    lines = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in edit.regions)
    where = f" (lines {lines})" if lines else ""
    if refused:
        tail = f"or drop them with {drop}; nothing was written"
    else:
        tail = "or drop them with `omni-port sync --discard-edits`; not deployable until then"
    message = f"edited since sync wrote it{where}: take the edits with `omni-port continue`, {tail}"
    line = edit.regions[0][0] if edit.regions else 1
    return Finding(Code.OP207, path, line, message + _unrecorded(edit))


def _unrecorded(edit: HandEdit) -> str:
    """Why a file judged by the lock alone may be no edit at all."""
    if edit.recorded:
        return ""
    return (
        f" (judged by {LOCK_NAME} alone: this checkout has no record of what its syncs wrote "
        f"here, in {STATE_DIR}/{written.RECORD_DIR}/ (the next sync that writes keeps one); "
        "a lock that a pull or checkout replaced makes an earlier sync's own output look "
        "edited: if nobody edited the file, `--discard-edits` loses nothing)"
    )
