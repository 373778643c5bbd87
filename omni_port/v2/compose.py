"""The composition patch set: omni's V2 delta against vLLM, re-homed onto the NPU V2 runner.

``gpu_delta`` splits each omni V2 module into pieces against vLLM's runner (owned code,
copies of vLLM methods with their omni hunks). This stage decides, per method, what the
composed NPU class holds, following the override report:

- omni only, or both with omni's override calling ``super()``: omni's method, verbatim
  (in the composed class its ``super()`` reaches the NPU override);
- NPU only: nothing; the composed class inherits the NPU method;
- both, omni's override a copy of vLLM's method that does not delegate: a copy of the NPU
  override with omni's hunks, which the ordinary sync engine places (or reports);
- both, omni's override a replacement of vLLM's (it keeps fewer than ``KEPT_FLOOR`` of
  vLLM's statements, so there is no delta to move): omni's method, and the NPU override
  shadowed. That is a conflict until a reviewed allow-list entry says it is intended.

The runner class that extends vLLM's class is re-based onto the NPU class; classes that
extend another omni runner keep their bases, which the generated modules provide.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from omni_port.gpu.parity import AllowEntry
from omni_port.gpu.transplant import member_groups
from omni_port.gpu.vllm_delta import CopiedMethod, Delta, class_method
from omni_port.model import Chunk, ClassHeader, Copy, PatchSet, Piece
from omni_port.pyast import diff
from omni_port.pyast.syntax import Stmt, Tree
from omni_port.v2.overrides import MethodRow, OverrideReport, Who

#: A "copy" of a vLLM method that keeps fewer of its statements than this replaces the
#: method: one shared ``synchronize()`` call is no delta that could move onto another body.
KEPT_FLOOR = 2


@dataclass(frozen=True, slots=True)
class Shadowed:
    """A method both sides override where the composed class runs only omni's replacement."""

    module: str
    #: Omni class that defines the method.
    owner: str
    row: MethodRow
    #: The reviewed allow-list entry that accepts it, if any.
    allow: AllowEntry | None


@dataclass(frozen=True, slots=True)
class Composition:
    """What the generated V2 modules are built from."""

    #: An ordinary patch set: sync builds it onto the NPU runner module.
    patches: PatchSet
    #: (module, class, method) of the methods generated from the NPU override.
    spliced: tuple[tuple[str, str, str], ...]
    shadowed: tuple[Shadowed, ...]


def compose(
    delta: Delta,
    report: OverrideReport,
    base_class: str,
    allowed: Sequence[AllowEntry] = (),
) -> Composition:
    """The composition patch set of ``delta`` (omni's V2 modules against vLLM) per ``report``."""
    copies = {(m.copy.owner, m.copy.name): m for m in delta.methods}
    spliced: list[tuple[str, str, str]] = []
    merged = _spliced_methods(delta, report, copies)
    shadowed: list[Shadowed] = []
    modules = []
    for module in delta.patches.modules:
        tree = delta.trees[module.name]
        pieces: list[Piece] = []
        for group in member_groups(module.pieces):
            head = group[0]
            row = _row(report, head)
            if isinstance(head, Copy):
                copied = copies.get((head.owner, head.name))
                if _splices(row, copied, tree):
                    pieces.append(replace(head, upstream_owner=report.npu_class))
                    pieces.extend(group[1:])
                    spliced.append((module.name, head.owner, head.name))
                    continue
                head = _verbatim(head, tree)
            elif _is_class(head):
                head = replace(head, code=rebase(head.code, base_class, report.npu_class))
            pieces.append(head)
        shadowed.extend(_shadowed(module.name, tree, report, allowed, merged))
        modules.append(replace(module, pieces=tuple(pieces)))
    return Composition(PatchSet(tuple(modules)), tuple(spliced), tuple(shadowed))


def _is_class(piece: Piece) -> bool:
    """A class header, or a whole module-level class carried as one chunk."""
    if isinstance(piece, ClassHeader):
        return True
    return isinstance(piece, Chunk) and not piece.owner and bool(piece.name)


def _row(report: OverrideReport, piece: Piece) -> MethodRow | None:
    if isinstance(piece, Copy | Chunk) and piece.owner and piece.name:
        return report.row(piece.owner, piece.name)
    return None


def _splices(row: MethodRow | None, copied: CopiedMethod | None, tree: Tree) -> bool:
    """Both override, omni's copy does not delegate, and it keeps enough of vLLM's method."""
    if row is None or row.who is not Who.BOTH or row.omni is None or row.omni.delegates:
        return False
    return copied is not None and _kept(copied, tree) >= KEPT_FLOOR


def _kept(copied: CopiedMethod, tree: Tree) -> int:
    """vLLM statements the copy keeps, in order; a leading docstring is no statement."""
    method = class_method(tree, copied.copy.owner, copied.copy.name)
    if method is None or not method.clauses:
        return 0
    body = list(method.clauses[0].stmts)
    if body and body[0].kind == "Expr" and body[0].key[:1] in "'\"":
        body = body[1:]
    mine = [key for stmt in body for key in _flat(stmt)]
    theirs = diff.flat_keys(copied.base_method.clauses[0])
    return round(diff.containment(mine, theirs) * len(mine)) if mine else 0


def _flat(stmt: Stmt) -> Iterator[str]:
    yield stmt.key
    for clause in stmt.clauses:
        for inner in clause.stmts:
            yield from _flat(inner)


def _verbatim(copy: Copy, tree: Tree) -> Chunk:
    """A copy carried as omni wrote it: its leading lines and its definition."""
    code = copy.leading + tree.text(copy.origin.start, copy.origin.end)
    return Chunk(copy.id, copy.owner, copy.name, code, copy.origin)


def _spliced_methods(
    delta: Delta, report: OverrideReport, copies: Mapping[tuple[str, str], CopiedMethod]
) -> frozenset[tuple[str, str]]:
    """(class, method) of every method generated from the NPU override."""
    return frozenset(
        key
        for key, copied in copies.items()
        if _splices(report.row(*key), copied, delta.trees[copied.base.module])
    )


def _shadowed(
    module: str,
    tree: Tree,
    report: OverrideReport,
    allowed: Sequence[AllowEntry],
    merged: frozenset[tuple[str, str]],
) -> Iterator[Shadowed]:
    """Methods whose omni code, ending in this module's class, never reaches the NPU override.

    Reported once, at the omni definition the code ends in (a subclass override that calls
    the base's through ``super()`` is the base's business); none when that code is a
    method generated from the NPU override.
    """
    for stmt in tree.body.stmts:
        if stmt.kind != "ClassDef" or not stmt.clauses:
            continue
        for member in stmt.clauses[0].stmts:
            row = report.row(stmt.name, member.name) if member.name else None
            if row is None or row.who is not Who.BOTH or row.omni is None or row.omni.delegates:
                continue
            owner, _, line = row.omni.last
            if (owner, line) != (stmt.name, member.start):
                continue  # the base's business, or a second definition (a setter)
            if any((cls, member.name) in merged for cls, _, _ in row.omni.chain):
                continue
            yield Shadowed(module, stmt.name, row, _allow(allowed, module, stmt.name, member.name))


def _allow(allowed: Sequence[AllowEntry], module: str, owner: str, name: str) -> AllowEntry | None:
    return next(
        (a for a in allowed if (a.module, a.owner, a.member) == (module, owner, name)), None
    )


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
