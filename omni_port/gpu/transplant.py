"""GPU omni hunks the NPU runners lack, re-homed onto the NPU runners and merged before sync.

vllm-ascend's ``NPUModelRunner`` descends from vLLM's ``GPUModelRunner`` and keeps most of
its method bodies, so a hunk anchored in a vLLM method usually finds its place in the
vllm-ascend one by the same anchor matching that ports NPU blocks across releases. Two
stages, both pure:

- ``plan`` (for ``gpu-delta --transplant``) picks the GPU hunks parity found missing or
  partial on the NPU side (a carried, inherited or allowed hunk would only duplicate code)
  and re-homes them: the paired NPU module, its runner class, ids ``...gpu-edit-03``.
- ``merge`` (for ``sync --transplant``) adds those blocks to the copies of the main patch
  set, after each copy's own blocks. A block whose method the NPU class does not copy has
  nowhere to go: it becomes a conflict row and finding, never a silent drop. Everything
  else goes through the ordinary locate/splice path, so an anchor that does not transfer
  is the usual conflict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from omni_port.errors import BadInput
from omni_port.gpu.counterparts import Parity, runner_class
from omni_port.gpu.parity import PAIRS, HunkParity
from omni_port.gpu.vllm_delta import Delta
from omni_port.model import (
    Block,
    BlockKind,
    Chunk,
    Code,
    Copy,
    Finding,
    ModulePatches,
    PatchSet,
    Piece,
    Placement,
    Suite,
    Tree,
)
from omni_port.model import Status as PlaceStatus
from omni_port.patches.patchfile import INDEX_NAME, piece_filename
from omni_port.pyast.syntax import find_def

#: Prefix of the last id part of a transplanted block (``...execute_model.gpu-edit-03``):
#: distinct from the NPU blocks' ids, valid in a patch file name, and easy to grep for.
PREFIX = "gpu-"
#: Parity statuses worth transplanting: the NPU side lacks all or part of the hunk.
TAKEN = (Parity.MISSING, Parity.PARTIAL)
_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


# --- plan: which GPU hunks go where -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Moved:
    """One GPU hunk re-homed onto an NPU runner."""

    #: The block as the transplant patch set holds it (NPU module, owner and id).
    block: Block
    #: NPU module file name.
    module: str
    #: Id of the GPU hunk it comes from.
    source_id: str
    #: Parity status of the GPU hunk: missing or partial.
    status: Parity
    #: Whether the NPU runner class defines the method itself; if not, sync reports it.
    hosted: bool


@dataclass(frozen=True, slots=True)
class Skipped:
    """A GPU gap that cannot be transplanted, and why."""

    module: str
    owner: str
    member: str
    #: Hunk id, or ``module.Class.method`` for an owned method.
    id: str
    #: GPU source path and line, for the report.
    path: str
    line: int
    status: Parity
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    """The transplant patch set and the account of every GPU gap."""

    #: Per NPU module: a copy piece per method, each followed by its re-homed blocks.
    patches: PatchSet
    moved: tuple[Moved, ...]
    skipped: tuple[Skipped, ...]


OWNED = (
    "an omni-owned GPU method (a whole omni method, not a hunk of a copied one) "
    "cannot be transplanted; port it to the NPU runner by hand or allow the gap"
)


def plan(
    delta: Delta,
    npu: Mapping[str, Tree],
    rows: Sequence[HunkParity],
    upstream_class: str = "NPUModelRunner",
) -> Plan:
    """The GPU hunks of copied methods the NPU runners lack, re-homed onto them.

    ``npu`` holds the parsed NPU runners by module file name and ``rows`` their parity
    with ``delta``; ``upstream_class`` is the class the NPU copies come from.
    """
    judged = {row.id: row for row in rows if row.side == "gpu"}
    pairs = dict(PAIRS)
    pieces: dict[str, list[Piece]] = {}
    moved: list[Moved] = []
    skipped: list[Skipped] = []
    for method in delta.methods:
        gpu_module = method.base.module
        npu_module = pairs.get(gpu_module, "")
        tree = npu.get(npu_module)
        cls = runner_class(tree) if tree is not None else None
        taken: list[Moved] = []
        for block in method.hunks:
            row = judged.get(block.id)
            if row is None or cls is None:
                skipped.append(_unjudged(block, gpu_module, npu_module, cls is not None))
            elif row.status in TAKEN:
                hosted = _defines(cls.clauses[0], block.member)
                taken.append(_moved(block, gpu_module, npu_module, cls.name, row.status, hosted))
        if taken and cls is not None:
            copy = method.copy
            host = Copy(
                f"{npu_module.removesuffix('.py')}.{cls.name}.{copy.name}",
                cls.name,
                copy.name,
                upstream_class,
                copy.upstream_name,
                "",
                copy.origin,
            )
            pieces.setdefault(npu_module, []).extend([host, *(m.block for m in taken)])
            moved.extend(taken)
    skipped.extend(_owned(rows))
    modules = _modules(delta, pieces)
    return Plan(PatchSet(modules), tuple(moved), tuple(skipped))


def _moved(
    block: Block, gpu_module: str, npu_module: str, owner: str, status: Parity, hosted: bool
) -> Moved:
    local = block.id.rsplit(".", 1)[-1]
    ident = f"{npu_module.removesuffix('.py')}.{owner}.{block.member}.{PREFIX}{local}"
    where = f"GPU {gpu_module} {block.owner}.{block.member} {local}"
    note = "missing on NPU" if status is Parity.MISSING else "partly present on NPU: review"
    title = f"From {where} ({note})" + (f": {block.title}" if block.title else "")
    rehomed = replace(block, id=ident, owner=owner, title=title)
    return Moved(rehomed, npu_module, block.id, status, hosted)


def _defines(body: Suite, name: str) -> bool:
    found = find_def(body, name)
    return found is not None and found.kind in _DEF_KINDS


def _unjudged(block: Block, module: str, npu_module: str, has_runner: bool) -> Skipped:
    if not npu_module:
        reason = "no NPU runner module pairs with this GPU module"
    elif not has_runner:
        reason = f"parity did not judge it: no NPU runner {npu_module} among the parity sources"
    else:
        reason = f"parity did not judge it: {block.owner} is not the runner class of {module}"
    return Skipped(
        module,
        block.owner,
        block.member,
        block.id,
        block.origin.path,
        block.origin.start,
        Parity.MISSING,
        reason,
    )


def _owned(rows: Sequence[HunkParity]) -> Iterator[Skipped]:
    for row in rows:
        if row.side == "gpu" and row.kind == "owned" and row.status in TAKEN:
            yield Skipped(
                row.module, row.owner, row.member, row.id, row.path, row.start, row.status, OWNED
            )


def _modules(delta: Delta, pieces: Mapping[str, list[Piece]]) -> tuple[ModulePatches, ...]:
    """One module per NPU runner that receives blocks, in the order of ``PAIRS``."""
    sources = {m.name: m for m in delta.patches.modules}
    return tuple(
        replace(sources[gpu_name], name=npu_name, pieces=tuple(pieces[npu_name]), unused_imports=())
        for gpu_name, npu_name in PAIRS
        if npu_name in pieces and gpu_name in sources
    )


# --- merge: extra blocks into the main patch set ------------------------------------------


@dataclass(frozen=True, slots=True)
class Extra:
    """One transplant input of sync: a patch set of copies and the blocks to add to them."""

    #: The directory as the user gave it (shown in findings, headers and the lock).
    label: str
    #: sha256 of its files (``lockfile.patches_digest``).
    sha256: str
    patches: PatchSet


@dataclass(frozen=True, slots=True)
class Merged:
    """The main patch set with the transplanted blocks in, and those that found no copy."""

    patches: PatchSet
    #: (label, sha256) of every transplant input, in the order given.
    inputs: tuple[tuple[str, str], ...]
    #: Ids of the transplanted blocks that joined a copy, in merge order.
    joined: tuple[str, ...]
    #: Blocks with no copy to join: conflict rows for the report (not in any output).
    orphans: tuple[Placement, ...]
    #: One OP301 finding per orphan.
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class _Incoming:
    block: Block
    module: str
    #: Where the block's patch file is, for findings.
    path: str


def merge(main: PatchSet, extras: Sequence[Extra]) -> Merged:
    """Add every block of ``extras`` to the copy of the same module, class and method.

    Raises BadInput (OP201) for a transplant input that is not made of copies and their
    blocks, or whose block ids clash with the main set or another input.
    """
    seen = {piece.id for module in main.modules for piece in module.pieces}
    waiting: dict[tuple[str, str, str], list[_Incoming]] = {}
    for extra in extras:
        for item in _incoming(extra):
            if item.block.id in seen:
                raise BadInput.at(
                    Code.OP201,
                    item.path,
                    1,
                    f"block id {item.block.id} is already in the patch set or another "
                    "transplant input",
                )
            seen.add(item.block.id)
            waiting.setdefault((item.module, item.block.owner, item.block.member), []).append(item)
    joined: list[str] = []
    orphans: list[tuple[_Incoming, str]] = []
    modules = []
    for module in main.modules:
        pieces: list[Piece] = []
        for group in member_groups(module.pieces):
            pieces.extend(group)
            head = group[0]
            if not isinstance(head, Copy):
                continue
            taken, refused = _fit(group, waiting.pop((module.name, head.owner, head.name), []))
            pieces.extend(taken)
            joined.extend(block.id for block in taken)
            orphans.extend(refused)
        modules.append(replace(module, pieces=tuple(pieces)))
    for key, rest in waiting.items():
        reason = _homeless(main, *key)
        orphans.extend((item, reason) for item in rest)
    rows = tuple(_orphan_row(item, reason) for item, reason in orphans)
    findings = tuple(_orphan_finding(item, reason) for item, reason in orphans)
    inputs = tuple((extra.label, extra.sha256) for extra in extras)
    return Merged(PatchSet(tuple(modules)), inputs, tuple(joined), rows, findings)


def _incoming(extra: Extra) -> Iterator[_Incoming]:
    """The blocks of one transplant input; BadInput unless it is copies and their blocks."""
    index = f"{extra.label}/{INDEX_NAME}"
    for module in extra.patches.modules:
        host: Copy | None = None
        for piece in module.pieces:
            path = f"{extra.label}/{piece_filename(module, piece)}"
            if isinstance(piece, Copy):
                host = piece
            elif not isinstance(piece, Block):
                kind = "chunk" if isinstance(piece, Chunk) else "class header"
                raise BadInput.at(
                    Code.OP201,
                    path,
                    1,
                    f"a transplant input holds only copies and their blocks, not a {kind} "
                    f"(is {extra.label} an ordinary patch set? write transplants with "
                    "`omni-port gpu-delta --transplant`)",
                )
            elif host is None:
                raise BadInput.at(
                    Code.OP201, index, 1, f"block {piece.id} does not follow the copy it edits"
                )
            elif (piece.owner, piece.member) != (host.owner, host.name):
                raise BadInput.at(
                    Code.OP201,
                    path,
                    1,
                    f"block of {piece.owner}.{piece.member} follows the copy of "
                    f"{host.owner}.{host.name}",
                )
            else:
                yield _Incoming(piece, module.name, path)


def member_groups(pieces: Sequence[Piece]) -> Iterator[list[Piece]]:
    """Pieces by member: a copy with the blocks that follow it, or one other piece."""
    group: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, Block) and group and isinstance(group[0], Copy):
            group.append(piece)
            continue
        if group:
            yield group
        group = [piece]
    if group:
        yield group


def _fit(
    group: Sequence[Piece], incoming: Sequence[_Incoming]
) -> tuple[list[Block], list[tuple[_Incoming, str]]]:
    """The blocks that can join a copy; a second signature edit of one method cannot.

    Statement-level blocks that claim the same upstream statements are settled by
    ``locate`` (the weaker is a conflict); two signature edits would both rewrite the def
    line, so the transplanted one is refused here.
    """
    signed = any(isinstance(p, Block) and p.kind is BlockKind.SIGNATURE for p in group)
    taken: list[Block] = []
    refused: list[tuple[_Incoming, str]] = []
    for item in incoming:
        if item.block.kind is BlockKind.SIGNATURE and signed:
            reason = "the NPU copy already edits the signature; merge the two edits by hand"
            refused.append((item, reason))
            continue
        signed = signed or item.block.kind is BlockKind.SIGNATURE
        taken.append(item.block)
    return taken, refused


def _homeless(main: PatchSet, module: str, owner: str, member: str) -> str:
    """Why a block found no copy in the main patch set."""
    found = next((m for m in main.modules if m.name == module), None)
    if found is None:
        return f"the patch set has no module {module}"
    owned = any(isinstance(p, Chunk) and (p.owner, p.name) == (owner, member) for p in found.pieces)
    if owned:
        return (
            f"{owner}.{member} is omni-owned code in the patch set, not a copy of upstream, "
            "so there is no upstream body to place the block in; port it by hand"
        )
    return (
        f"the patch set has no copy of {owner}.{member} (the NPU class does not override "
        f"{member}); copy the method into the NPU runner and re-extract, or allow the gap"
    )


def _orphan_row(incoming: _Incoming, reason: str) -> Placement:
    block = incoming.block
    return Placement(
        block.id,
        incoming.module,
        block.owner,
        block.member,
        block.kind,
        block.marked,
        PlaceStatus.CONFLICT,
        0.0,
        reason=reason,
    )


def _orphan_finding(incoming: _Incoming, reason: str) -> Finding:
    message = f"{incoming.module}: transplanted block {incoming.block.id}: {reason}"
    return Finding(Code.OP301, incoming.path, 1, message)
