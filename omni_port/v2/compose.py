"""The composition patch set: omni's V2 delta against vLLM, re-homed onto the NPU V2 runner.

``gpu_delta`` splits each omni V2 module into pieces against vLLM's runner (owned code,
copies of vLLM methods with their omni hunks). This stage builds what the composed NPU
module is made of:

- every method both runner families override as ``decide`` says: the NPU wrapper around
  omni's override renamed, a copy of the NPU override with omni's hunks for the sync engine
  to place, omni's method with a comment naming its allow-list entry, or omni's method under
  a conflict region;
- every other piece as omni wrote it, rewritten for the NPU (``rewrite``: what vllm-ascend's
  patches install, device-neutral checks, torch.cuda stated), plus the functions of omni's
  own modules that ``carry`` brings in for the same reason;
- the runner class that extends vLLM's class re-based onto the NPU class; classes that
  extend another omni runner keep their bases, which the generated modules provide.

NPU-only methods are inherited, not generated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import libcst as cst

from omni_port.gpu.parity import AllowEntry
from omni_port.gpu.transplant import member_groups
from omni_port.gpu.vllm_delta import Delta
from omni_port.model import (
    CONFLICT_CLOSE,
    CONFLICT_OPEN,
    Block,
    Chunk,
    ClassHeader,
    Copy,
    PatchSet,
    Piece,
    Rule,
    Tree,
)
from omni_port.v2 import carry, rewrite, wrap
from omni_port.v2.ascend import AscendPatches
from omni_port.v2.decide import Composed, Npu, decide
from omni_port.v2.overrides import OverrideReport
from omni_port.verify.conflicts import NOT_COMPOSED


@dataclass(frozen=True, slots=True)
class Context:
    """What a composition needs besides omni's delta and the override report."""

    npu: Npu
    #: What vllm-ascend's patch modules install.
    patches: AscendPatches = field(default_factory=AscendPatches)
    #: vLLM-Omni's package sources by member path (for ``carry``).
    omni_texts: Mapping[str, str] | None = None
    allowed: Sequence[AllowEntry] = ()
    #: vLLM's runner class, which the runner classes are re-based from.
    base_class: str = "GPUModelRunner"


@dataclass(frozen=True, slots=True)
class Composition:
    """What the generated V2 modules are built from."""

    #: An ordinary patch set: sync builds it onto the NPU runner module.
    patches: PatchSet
    #: (module, class, method) of the methods generated from the NPU override.
    spliced: tuple[tuple[str, str, str], ...]
    #: Every method both sides override, as composed (or not).
    composed: tuple[Composed, ...]
    #: Functions of omni's modules carried into the generated ones.
    carried: tuple[carry.Carried, ...] = ()

    @property
    def conflicts(self) -> tuple[Composed, ...]:
        return tuple(c for c in self.composed if c.rule is None)


def compose(delta: Delta, report: OverrideReport, context: Context) -> Composition:
    """The composition patch set of ``delta`` (omni's V2 modules against vLLM) per ``report``."""
    decided = decide(delta, report, context.npu, context.allowed)
    options = rewrite.Options(context.patches)
    modules = []
    carried: list[carry.Carried] = []
    for module in delta.patches.modules:
        tree = delta.trees[module.name]
        pieces: list[Piece] = []
        for group in member_groups(module.pieces):
            head = group[0]
            done = decided.get((head.owner, head.name)) if isinstance(head, Copy) else None
            if isinstance(head, Copy) and done is not None and done.rule is Rule.NPU_SPLICE:
                pieces.append(replace(head, upstream_owner=context.npu.class_name))
                pieces.extend(_block(b, context.patches) for b in group[1:] if isinstance(b, Block))
                continue
            if isinstance(head, Copy):
                head = _verbatim(head, tree)
            found = _head_carry(head, pieces, context)
            carried.extend(found)
            pieces.extend(_edited(head, decided, context, options, found))
        modules.append(replace(module, pieces=tuple(pieces)))
    spliced = tuple(
        (c.module, c.owner, c.name) for c in decided.values() if c.rule is Rule.NPU_SPLICE
    )
    composed = tuple(sorted(decided.values(), key=lambda c: (c.module, c.owner, c.name)))
    return Composition(PatchSet(tuple(modules)), spliced, composed, tuple(carried))


def _head_carry(
    head: Piece, pieces: Sequence[Piece], context: Context
) -> tuple[carry.Carried, ...]:
    """The functions to carry in after the first module-level chunk (its imports)."""
    if pieces or not isinstance(head, Chunk) or head.owner or head.name:
        return ()
    if context.omni_texts is None:
        return ()
    return carry.find(head.code, context.omni_texts, context.patches)


def _block(block: Block, patches: AscendPatches) -> Block:
    options = rewrite.Options(patches, in_function=True)
    return replace(block, code=rewrite.rewrite(block.code, options))


def _verbatim(copy: Copy, tree: Tree) -> Chunk:
    """A copy carried as omni wrote it: its leading lines and its definition."""
    code = copy.leading + tree.text(copy.origin.start, copy.origin.end)
    return Chunk(copy.id, copy.owner, copy.name, code, copy.origin)


def _edited(
    piece: Piece,
    decided: Mapping[tuple[str, str], Composed],
    context: Context,
    options: rewrite.Options,
    carried: Sequence[carry.Carried],
) -> Iterator[Piece]:
    """A piece rewritten for the NPU, its decided methods composed (and carried functions
    after a module's first chunk)."""
    if isinstance(piece, ClassHeader):
        yield replace(piece, code=rebase(piece.code, context.base_class, context.npu.class_name))
        return
    if not isinstance(piece, Chunk):
        yield piece
        return
    owner = piece.owner or piece.name
    code = piece.code if not carried else carry.without_imports(piece.code, carried)
    parsed = rewrite.parse_piece(code, owner)
    if parsed is not None:
        module, prefix = parsed
        module = rewrite.rewrite_module(module, options)
        edits = {n: c for (o, n), c in decided.items() if o == owner and piece.name in (o, n)}
        module = _compose_methods(module, owner, edits, context)
        code = rewrite.render_piece(module, prefix)
    if not piece.owner and piece.name:
        code = rebase(code, context.base_class, context.npu.class_name)
    yield replace(piece, code=code)
    for found in carried:
        yield found.chunk(options)


def _compose_methods(
    module: cst.Module, owner: str, edits: Mapping[str, Composed], context: Context
) -> cst.Module:
    """``module`` with each decided method of class ``owner`` replaced as decided."""
    if not edits:
        return module
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == owner:
            stmt = compose_class(stmt, edits, context)
        body.append(stmt)
    return module.with_changes(body=body)


def compose_class(
    cls: cst.ClassDef, edits: Mapping[str, Composed], context: Context
) -> cst.ClassDef:
    """A class with each method of ``edits`` replaced as decided (the NPU wrapper around
    omni's renamed override, the allow-list comment, the conflict region)."""
    block = cls.body
    if not isinstance(block, cst.IndentedBlock):
        return cls
    members: list[cst.BaseStatement] = []
    done: set[str] = set()
    for member in block.body:
        name = member.name.value if isinstance(member, cst.FunctionDef) else ""
        if name in edits and name not in done:
            done.add(name)
            members.extend(_composed(member, edits[name], context))  # type: ignore[arg-type]
        else:
            members.append(member)
    return cls.with_changes(body=block.with_changes(body=members))


def _composed(
    function: cst.FunctionDef, composed: Composed, context: Context
) -> list[cst.FunctionDef]:
    npu = context.npu
    row = composed.row
    where = f"{npu.path}:{row.npu.line}" if row.npu is not None else npu.path
    if composed.rule is Rule.NPU_WRAPPER:
        wrapper = wrap.npu_method(npu.text, npu.class_name, row.name)
        assert wrapper is not None
        renamed = wrap.body_name(row.name)
        wrapping = wrap.Wrapping(
            wrapper,
            row.name,
            wrap.npu_methods(npu.text, npu.class_name),
            wrapper_comment=(
                rewrite.tag(
                    Rule.NPU_WRAPPER,
                    f"{npu.class_name}.{row.name} of {npu.label} ({where}), copied; it runs",
                ),
                f"# omni's {row.name} (kept as {renamed}) where it called super().{row.name}(...).",
            ),
            body_comment=(
                rewrite.tag(Rule.NPU_WRAPPER, f"omni's {row.name}, run by the NPU wrapper"),
            ),
        )
        wrapper, body = wrap.wrapped(wrapping, function)
        return [guarded(wrapper, composed, context), body]
    if composed.rule is Rule.ALLOWED and composed.allow is not None:
        what = f"{npu.class_name}.{row.name} ({where}) does not run here: {composed.reason}"
        return [_with_comments(function, [rewrite.tag(Rule.ALLOWED, what)])]
    if composed.rule is None:
        return [_with_comments(function, conflict_lines(composed, npu, where))]
    return [function]


def guards(allowed: Sequence[AllowEntry], composed: Composed) -> list[AllowEntry]:
    """The reviewed entries that leave a step out of a class's copy of the NPU wrapper: a
    selector that is a statement prefix (a bare name selects a bypassed NPU override)."""
    key = (composed.module, composed.owner, composed.name)
    return [
        a
        for a in allowed
        if (a.module, a.owner, a.member) == key and a.selector and not a.selector.isidentifier()
    ]


def guarded(wrapper: cst.FunctionDef, composed: Composed, context: Context) -> cst.FunctionDef:
    """The wrapper copy without the NPU steps reviewed entries say the class cannot serve.
    An entry that selects no statement leaves the copy as it is (and is noted unused)."""
    npu = context.npu
    for entry in guards(context.allowed, composed):
        what = (
            f"`{entry.selector} ...` of {npu.class_name}.{composed.name} left out here: "
            f"{entry.reason} ({entry.path}:{entry.line})"
        )
        found = wrap.left_out(wrapper, entry.selector, rewrite.tag(Rule.GUARD, what))
        if found is not None:
            wrapper = found[0]
    return wrapper


def conflict_lines(composed: Composed, npu: Npu, where: str) -> list[str]:
    """The conflict region above a method that could not be composed."""
    stem = composed.module.removesuffix(".py")
    ident = f"{stem}.{composed.owner}.{composed.name}"
    entry = f"{composed.module}:{composed.owner}.{composed.name}  REASON"
    return [
        f"{CONFLICT_OPEN} {ident} {NOT_COMPOSED}",
        f"# {composed.reason}.",
        f"# {npu.class_name}.{composed.name} ({where}) does not run in this class. Compose the",
        "# two by hand in vLLM-Omni, or keep omni's on purpose: add",
        f"# `{entry}` to the --v2-allow file.",
        CONFLICT_CLOSE,
    ]


def _with_comments(function: cst.FunctionDef, lines: Sequence[str]) -> cst.FunctionDef:
    comments = [cst.EmptyLine(indent=True, comment=cst.Comment(line)) for line in lines]
    return function.with_changes(leading_lines=[*function.leading_lines, *comments])


# --- re-basing ------------------------------------------------------------------------------


def rebase(code: str, old: str, new: str) -> str:
    """``code`` with the base ``old`` of its first class statement renamed ``new``.

    ``code`` is a class header (``class X(old):``) or a whole class; anything else, and a
    class without that base, comes back unchanged.
    """
    tree = _parse_fragment(code)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None) if tree else None
    if node is None:
        return code
    lines = code.split("\n")
    for base in sorted(node.bases, key=lambda b: (b.lineno, b.col_offset), reverse=True):
        if isinstance(base, ast.Name) and base.id == old:
            line = lines[base.lineno - 1]
            start, end = _columns(line, base.col_offset, base.end_col_offset or 0)
            lines[base.lineno - 1] = line[:start] + new + line[end:]
    return "\n".join(lines)


def _parse_fragment(code: str) -> ast.Module | None:
    """A class header alone does not parse: give it a body."""
    for text in (code, code.rstrip("\n") + "\n    pass\n"):
        try:
            return ast.parse(text)
        except SyntaxError:
            continue
    return None


def _columns(line: str, start: int, end: int) -> tuple[int, int]:
    """``ast`` columns are UTF-8 byte offsets; string indices are characters."""
    data = line.encode("utf-8")
    return len(data[:start].decode("utf-8")), len(data[:end].decode("utf-8"))
