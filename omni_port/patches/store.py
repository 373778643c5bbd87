"""The file-system side of patch sets and output trees: read, compare, write atomically."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code, PatchSet
from omni_port.patches import validate
from omni_port.patches.lockfile import LOCK_NAME
from omni_port.patches.patchfile import INDEX_NAME, build_module, parse_index, parse_piece
from omni_port.sources.textio import decode, read_source, safe_relative, write_atomic, write_tree


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


#: Files that describe the rest of a tree: renamed last, so that an interrupted write
#: leaves a manifest that does not match the files, which the next run notices.
MANIFESTS = (INDEX_NAME, LOCK_NAME)


def apply(root: Path, files: Mapping[str, bytes], changes: Changes) -> None:
    """Write the changed files and remove stale ones; see ``textio.write_tree``.

    No file is ever half-written. A failure before the renames changes nothing; a failed
    rename puts back the files renamed before it; the index or lock goes last. A file that
    is a symbolic link is written through it, as editors do: the link stays a link (its
    target, when outside ``root``, is written atomically on its own, first).
    """
    changed = {}
    for rel in changes.changed:
        target = _through_links(root, rel)
        if isinstance(target, str):
            changed[target] = files[rel]
        else:
            write_atomic(target, files[rel])
    last = tuple(_through_links(root, rel) for rel in MANIFESTS)
    write_tree(root, changed, changes.removed, last=tuple(r for r in last if isinstance(r, str)))


def _through_links(root: Path, rel: str) -> str | Path:
    """Where writing ``root/rel`` must go: ``rel`` itself, or for a symbolic link the file
    it names, relative to ``root`` when inside it, else as an absolute path."""
    path = root / rel
    if not path.is_symlink():
        return rel
    real = Path(os.path.realpath(path))
    try:
        inside = real.relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return real
    return inside if safe_relative(inside) else real


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
