"""Statement trees of upstream modules, parsed once per content and kept in the cache.

Parsing a 3,500-line runner module with libcst costs most of a sync. So every tree is
stored in the cache, a release's, a commit's and a user's file alike, keyed by the sha256
of the source and a stamp of everything that shapes a tree (the parser modules, Python,
libcst). A missing, stale or damaged entry is dropped and parsed again: the cache can only
be slower, never different. Each entry carries the sha256 of its pickle, checked before
anything is unpickled, because a damaged pickle more often loads than fails: of the
single-byte changes of a small tree's entry, a third loaded as another tree (measured),
and the rest raised anything from UnpicklingError to OverflowError, MemoryError and
ModuleNotFoundError. A file being edited leaves a tree per saved version behind, so entries
unused for a month go too.
"""

from __future__ import annotations

import contextlib
import copyreg
import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import io
import os
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omni_port.errors import BadInput
from omni_port.model import Comment, Stmt, Suite, Tree
from omni_port.pyast import parser
from omni_port.sources.textio import SourceText, write_atomic

#: The modules whose code decides what a tree holds.
_SHAPERS = ("syntax.py", "cstwalk.py", "parser.py")
#: How a tree is written (``_dumps``); a new way makes the old entries stale.
_FORMAT = b"constructor-calls, sha256 first"


@functools.cache
def _stamp() -> str:
    """What a cached tree is only valid for: this parser code, Python and libcst."""
    digest = hashlib.sha256(sys.version.encode() + _FORMAT)
    digest.update(_libcst_version())
    folder = Path(parser.__file__).parent
    for name in _SHAPERS:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def _libcst_version() -> bytes:
    """The installed libcst's version file, read without importing libcst or
    ``importlib.metadata`` (a warm run needs neither; they cost more than the lookup)."""
    spec = importlib.util.find_spec("libcst")
    if spec is not None and spec.origin is not None:
        with contextlib.suppress(OSError):
            return (Path(spec.origin).parent / "_version.py").read_bytes()
    from importlib import metadata

    return metadata.version("libcst").encode()


def parsed(source: SourceText, cache: Path | None) -> Tree:
    """The tree of ``source``, from the cache when it was parsed before (same bytes).

    Raises BadInput (OP002) when the source does not parse; nothing is cached then.
    """
    if cache is None:
        return parser.parse(source.text, source.path)
    entry = cache / "trees" / f"{source.sha256}-{_stamp()}.pickle"
    kept = _load(entry)
    if isinstance(kept, Tree):
        return _named(kept, source.path)
    tree = parser.parse(source.text, source.path)
    _store(entry, tree)
    return tree


#: A stale entry (another parser's stamp) unused this long goes when the cache is written.
STALE_AFTER = 24 * 3600.0
#: Any entry unused this long goes too (each use refreshes its time).
UNUSED_AFTER = 30 * 24 * 3600.0


def _store(entry: Path, tree: Tree | None) -> None:
    """Keep ``tree`` at ``entry``; a read-only cache costs the next run a parse, nothing
    else. The first write of a run also drops entries of other stamps written over a day
    ago: every parser change would otherwise leave a whole cache of trees behind, and a
    day spares a second omni-port of another version sharing the cache. Entries unused
    for ``UNUSED_AFTER`` go whatever their stamp."""
    with contextlib.suppress(BadInput):
        write_atomic(entry, _dumps(tree))
    _prune(entry.parent)


@functools.cache
def _prune(folder: Path) -> None:
    import time

    now = time.time()
    current = f"-{_stamp()}.pickle"
    for entry in folder.glob("*.pickle"):
        with contextlib.suppress(OSError):
            age = now - entry.stat().st_mtime
            if age > UNUSED_AFTER or (not entry.name.endswith(current) and age > STALE_AFTER):
                entry.unlink()


#: What ``_load`` returns for an entry that is missing or damaged (a kept value may be None).
_MISSING = object()


def _is_tree(kept: object) -> bool:
    return kept is None or isinstance(kept, Tree)


def _load(entry: Path, accept: Callable[[object], bool] = _is_tree) -> object:
    """The tree (or None, a member's absence) kept at ``entry`` (what ``accept`` takes);
    ``_MISSING`` when there is none, and when it is damaged, after dropping it. Never
    raises."""
    try:
        data = entry.read_bytes()
    except OSError:
        return _MISSING
    digest, _, payload = data.partition(b"\n")
    try:
        kept = pickle.loads(payload) if digest == _digest(payload) else _MISSING
    except Exception:
        # Bytes that match their sha256 and still fail to load (a record class changed
        # under the same stamp) are damaged all the same.
        kept = _MISSING
    if kept is _MISSING or not accept(kept):
        with contextlib.suppress(OSError):
            entry.unlink()
        return _MISSING
    _touch(entry)
    return kept


def _digest(payload: bytes) -> bytes:
    return hashlib.sha256(payload).hexdigest().encode()


def _named(tree: Tree, path: str) -> Tree:
    """``tree`` under the path this run was given: one entry serves the same bytes at any
    path (a release and a copy of its module), and diagnostics name the source as given."""
    return tree if tree.path == path else dataclasses.replace(tree, path=path)


def _touch(entry: Path) -> None:
    """Mark an entry used now (pruning goes by the time of last use)."""
    with contextlib.suppress(OSError):
        os.utime(entry)


def member_tree(text: str, label: str, owner: str, name: str, cache: Path | None) -> Tree | None:
    """The tree of one member of the module ``text`` (``parser.member_source``), parsed on
    its own; None when the module lacks the member or it does not parse. Kept in the cache
    by the module's sha256 and the member's name, the absence of a member too."""
    return member_trees(text, label, [(owner, name)], cache)[(owner, name)]


#: Trees of member code parsed this run, by the code (``member_trees``).
Codes = dict[str, Tree | None]


def member_trees(
    text: str,
    label: str,
    wanted: Sequence[tuple[str, str]],
    cache: Path | None,
    codes: Codes | None = None,
) -> dict[tuple[str, str], Tree | None]:
    """``member_tree`` of each (owner, name) of ``wanted``. Of those the cache lacks, the
    module is parsed once for all, and a member whose code is in ``codes`` (filled here:
    a method most releases leave alone has one text in a dozen of them) is not parsed
    again."""
    found: dict[tuple[str, str], Tree | None] = {}
    entries = {key: _member_entry(text, key, cache) for key in wanted}
    for key, entry in entries.items():
        kept = _load(entry) if entry is not None else _MISSING
        if kept is None or isinstance(kept, Tree):
            found[key] = kept if kept is None else _named(kept, _member_path(label, key))
    missing = [key for key in wanted if key not in found]
    parsed = {} if codes is None else codes
    for key, code in parser.member_sources(text, missing).items() if missing else ():
        tree = None if code is None else _code_tree(code, parsed)
        found[key] = tree if tree is None else _named(tree, _member_path(label, key))
        entry = entries[key]
        if entry is not None:
            _store(entry, found[key])
    return {key: found[key] for key in wanted}


def _member_entry(text: str, key: tuple[str, str], cache: Path | None) -> Path | None:
    if cache is None:
        return None
    owner, name = key
    return cache / "trees" / f"{_sha256(text)}-{owner}.{name}-{_stamp()}.pickle"


def _member_path(label: str, key: tuple[str, str]) -> str:
    return f"{label}:{key[0]}.{key[1]}"


def _code_tree(code: str, parsed: Codes) -> Tree | None:
    """The tree of a member's ``code`` (None when it does not parse), from ``parsed`` when
    it was parsed before (its path is the caller's to set)."""
    if code not in parsed:
        tree = None
        with contextlib.suppress(BadInput):
            tree = parser.parse(code, "")
        parsed[code] = tree
    return parsed[code]


#: The statement keys of each method of a class, by method name (``basedetect.MethodKeys``).
Keys = dict[str, list[str]]


def kept_keys(
    text: str, class_name: str, cache: Path | None, keys: Callable[[str, str], Keys]
) -> Keys:
    """``keys(text, class_name)``, kept in the cache by the text's sha256, the class and a
    digest of the module that defines ``keys`` (beside the parser's stamp): ranking bases
    reads every upstream release, and parsing one for its keys costs about a second."""
    if cache is None:
        return keys(text, class_name)
    shaper = hashlib.sha256(Path(inspect.getfile(keys)).read_bytes()).hexdigest()[:12]
    name = f"{_sha256(text)}-keys.{class_name}.{shaper}-{_stamp()}.pickle"
    entry = cache / "trees" / name
    kept = _load(entry, lambda value: isinstance(value, dict))
    if isinstance(kept, dict):
        return kept
    found = keys(text, class_name)
    with contextlib.suppress(BadInput):
        write_atomic(entry, _dumps(found))
    _prune(entry.parent)
    return found


@functools.lru_cache(maxsize=64)
def _sha256(text: str) -> str:
    # Every copied member of a release is looked up by the release's digest: hash it once.
    return hashlib.sha256(text.encode()).hexdigest()


_Reducer = Callable[[Any], tuple[Callable[..., Any], tuple[Any, ...]]]


def _reducer(cls: type) -> _Reducer:
    names = [f.name for f in dataclasses.fields(cls)]
    return lambda value: (cls, tuple(getattr(value, name) for name in names))


#: Each record of a tree is written as a call of its constructor: loading runs the
#: dataclass ``__init__`` instead of the generic ``__setstate__`` of slotted dataclasses,
#: which looks up the fields anew for every object (loading takes half the time).
_REDUCERS: dict[type, _Reducer] = {cls: _reducer(cls) for cls in (Comment, Stmt, Suite, Tree)}


def _dumps(tree: Tree | Keys | None) -> bytes:
    """The entry of ``tree`` (or of keys): the sha256 of its pickle (hexadecimal), a
    newline, the pickle."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, **_REDUCERS}
    pickler.dump(tree)
    payload = buffer.getvalue()
    return _digest(payload) + b"\n" + payload
