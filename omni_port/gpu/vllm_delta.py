"""The omni delta of vLLM-Omni's GPU runners: per-method vLLM bases and their omni hunks.

The GPU runners copy methods of vLLM's ``GPUModelRunner`` and change them, mostly without
markers. A copy may lag the vLLM release its vLLM-Omni release targets, so each copied
method is compared with the release (among candidates) whose method body it matches best;
against another release a third of the apparent omni edits are vLLM's own changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from omni_port.extract import extractor
from omni_port.extract.basedetect import own_methods
from omni_port.model import (
    Block,
    Chunk,
    Copy,
    Finding,
    Located,
    ModulePatches,
    PatchSet,
    Piece,
    SourceText,
    Stmt,
    Tree,
    Upstream,
)
from omni_port.pyast import diff
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import find_def
from omni_port.sources import versionfile
from omni_port.sources.textio import decode
from omni_port.sources.upstream import VLLM_RUNNER, Progress, Spec, SpecKind, locate
from omni_port.sources.vllm_sources import release_member

#: vLLM's runner class, which the GPU runners copy methods from.
GPU_CLASS = "GPUModelRunner"
#: A method whose own statements are less than this share of a vLLM method's is owned code,
#: not a copy (the GPU AR runner's ``execute_model`` keeps about 42% of vLLM's).
COPY_FLOOR = 0.4
_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


# --- locating vLLM ------------------------------------------------------------------------


def target_vllm(omni_version: str) -> str:
    """The vLLM release a vLLM-Omni release targets: the same major.minor, patch 0.

    vLLM-Omni states the policy in ``vllm_omni/version.py`` (it warns when vLLM's
    major.minor differs from its own).
    """
    match = re.match(r"^(\d+)\.(\d+)", omni_version)
    if match is None:
        raise ValueError(f"not a release version: {omni_version!r}")
    return f"{match.group(1)}.{match.group(2)}.0"


def neighbours(target: str, before: int = 2, after: int = 1) -> list[str]:
    """Minor releases around ``target`` (``0.26.0`` -> 0.24.0, 0.25.0, 0.26.0, 0.27.0)."""
    major, minor = (int(part) for part in target.split(".")[:2])
    return [f"{major}.{m}.0" for m in range(max(minor - before, 0), minor + after + 1)]


def omni_version_of(root: Path) -> str:
    """``__version__`` of a vLLM-Omni tree (``vllm_omni/_version.py``, in any form
    ``sources.versionfile`` reads), or ""."""
    return versionfile.tree_version(root, "vllm_omni")


def locate_vllm(
    spec: Spec, cache: Path, progress: Progress | None = None, member: str = VLLM_RUNNER
) -> Located:
    """vLLM's ``member`` (by default ``gpu_model_runner.py``) from a path, the installed
    package or a release.

    A release's Python sources are kept once in the cache, where ``verify`` reads them
    too (``sources.vllm_sources``), and the wheel (~300 MB) is dropped. Raises BadInput
    (OP003) when it cannot be had.
    """
    if spec.kind is SpecKind.PYPI:
        data = release_member(spec.version, member, cache, progress)
        return Located(spec.label, member, decode(data, f"{spec.label}/{member}"))
    return locate(spec, member, cache, progress)


# --- per-method bases ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MethodScore:
    """How well one vLLM release explains one copied method."""

    label: str
    #: Share of the copy's own statements found, in order, in the release's method.
    containment: float
    #: Share of the release's method statements found, in order, in the copy.
    coverage: float


@dataclass(frozen=True, slots=True)
class MethodBase:
    """The vLLM release a copied GPU method was copied from, as far as its body tells."""

    #: GPU module file name, e.g. ``gpu_ar_model_runner.py``.
    module: str
    owner: str
    member: str
    #: Label of the best release.
    base: str
    #: Its score; ``scores`` has every candidate's, in candidate order.
    best: MethodScore
    scores: tuple[MethodScore, ...]


def method_bases(
    runners: Mapping[str, Tree],
    candidates: Mapping[str, Tree],
    target: str,
    upstream_class: str = GPU_CLASS,
) -> list[MethodBase]:
    """The best release of every runner method that copies an ``upstream_class`` method.

    Releases rank by containment, then coverage (a later release that only added
    statements contains a lagging copy as fully as the release it was copied from, but
    covers less of it), then nearness to ``target`` in candidate order.
    """
    order = list(candidates)
    methods = {label: _class_methods(tree, upstream_class) for label, tree in candidates.items()}
    found = []
    for module, tree in sorted(runners.items()):
        for owner, member, keys in own_methods(tree):
            scores = [
                MethodScore(label, diff.containment(keys, up), diff.containment(up, keys))
                for label in order
                if (up := methods[label].get(member)) is not None and len(keys) >= 2
            ]
            if not scores:
                continue
            near = {label: abs(order.index(label) - order.index(target)) for label in order}
            best = max(scores, key=lambda s: (s.containment, s.coverage, -near[s.label]))
            if best.containment >= COPY_FLOOR:
                found.append(MethodBase(module, owner, member, best.label, best, tuple(scores)))
    return found


def _class_methods(tree: Tree, class_name: str) -> dict[str, list[str]]:
    cls = find_def(tree.body, class_name)
    if cls is None or not cls.clauses:
        return {}
    return {
        m.name: diff.flat_keys(m.clauses[0])
        for m in cls.clauses[0].stmts
        if m.kind in _DEF_KINDS and m.clauses
    }


def class_method(tree: Tree, class_name: str, name: str) -> Stmt | None:
    """The method ``class_name.name`` defined at module level of ``tree``."""
    cls = find_def(tree.body, class_name)
    if cls is None or not cls.clauses:
        return None
    method = find_def(cls.clauses[0], name)
    return method if method is not None and method.kind in _DEF_KINDS else None


# --- the delta ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CopiedMethod:
    """A copied GPU method, its vLLM base and its omni hunks against that base."""

    base: MethodBase
    #: The copy as extracted from its base.
    copy: Copy
    #: The method in the base release (for the statements a hunk replaced).
    base_method: Stmt
    #: Statement-level omni edits: marked blocks where markers exist, implicit edits else.
    hunks: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class Delta:
    """The omni changes of the GPU runners, as patches and per copied method."""

    #: An ordinary patch set (usable by ``sync``); each copy's blocks come from its base.
    patches: PatchSet
    methods: tuple[CopiedMethod, ...]
    #: The GPU runners, parsed, by module file name.
    trees: Mapping[str, Tree]
    #: Malformed markers (lenient) and notes.
    findings: tuple[Finding, ...]


def gpu_delta(
    sources: Mapping[str, SourceText],
    bases: Mapping[str, Upstream],
    target: str,
    lenient: bool = False,
) -> Delta:
    """The omni delta of GPU runner modules (by file name) against vLLM ``bases`` (by label).

    ``target`` labels the release the modules' structure is taken from; each copied
    method's pieces come from the extraction against its best base. Raises BadInput for
    syntax errors or (unless ``lenient``) malformed markers.
    """
    trees = {name: parse(source.text, source.path) for name, source in sources.items()}
    candidates = {label: base.tree for label, base in bases.items()}
    chosen = method_bases(trees, candidates, target)
    options = extractor.ExtractOptions(
        upstream_class=GPU_CLASS, lenient=lenient, implicit=True, copy_threshold=COPY_FLOOR
    )
    modules: list[ModulePatches] = []
    methods: list[CopiedMethod] = []
    findings: list[Finding] = []
    for name, source in sorted(sources.items()):
        mine = {(m.owner, m.member): m for m in chosen if m.module == name}
        labels = sorted({target, *(m.base for m in mine.values())}, key=list(bases).index)
        extractions = {
            label: extractor.extract_module(source, name, bases[label], options) for label in labels
        }
        findings.extend(extractions[target].findings)
        pieces = _assemble(extractions, target, mine)
        modules.append(replace(extractions[target].module, pieces=pieces))
        methods.extend(_copied(pieces, mine, bases))
    return Delta(PatchSet(tuple(modules)), tuple(methods), trees, tuple(findings))


def _groups(pieces: Sequence[Piece]) -> list[list[Piece]]:
    """Pieces grouped by member: a copy with its blocks, or a single other piece."""
    groups: list[list[Piece]] = []
    for piece in pieces:
        if isinstance(piece, Block) and groups and isinstance(groups[-1][0], Copy):
            groups[-1].append(piece)
        else:
            groups.append([piece])
    return groups


def _member_key(piece: Piece) -> tuple[str, str] | None:
    if isinstance(piece, Copy) or (isinstance(piece, Chunk) and piece.name and piece.owner):
        return piece.owner, piece.name
    return None


def _assemble(
    extractions: Mapping[str, extractor.Extraction],
    target: str,
    chosen: Mapping[tuple[str, str], MethodBase],
) -> tuple[Piece, ...]:
    """The target's pieces, each chosen copy (with its blocks) taken from its own base."""
    by_base = {
        label: {_member_key(g[0]): g for g in _groups(ex.module.pieces) if isinstance(g[0], Copy)}
        for label, ex in extractions.items()
    }
    pieces: list[Piece] = []
    for group in _groups(extractions[target].module.pieces):
        key = _member_key(group[0])
        method = chosen.get(key) if key is not None else None
        if method is not None and key in by_base[method.base]:
            group = by_base[method.base][key]
        pieces.extend(group)
    return tuple(pieces)


def _copied(
    pieces: Sequence[Piece],
    chosen: Mapping[tuple[str, str], MethodBase],
    bases: Mapping[str, Upstream],
) -> Iterator[CopiedMethod]:
    for group in _groups(pieces):
        head = group[0]
        if not isinstance(head, Copy) or (head.owner, head.name) not in chosen:
            continue
        method = chosen[(head.owner, head.name)]
        base_method = class_method(bases[method.base].tree, GPU_CLASS, head.upstream_name)
        if base_method is None:
            continue
        blocks = tuple(p for p in group[1:] if isinstance(p, Block))
        yield CopiedMethod(method, head, base_method, blocks)
