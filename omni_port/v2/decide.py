"""Which rule composes each method both runner families override, or why none can.

Decided once per method, at the omni class whose definition omni's code ends in (a subclass
override that calls the base's through ``super()`` is the base's business):

- ``omni-super``: omni's override calls ``super()``: in the composed class (omni's classes
  above the NPU class) that reaches the NPU override. Omni's method, verbatim.
- ``allowed``: a reviewed allow-list entry says dropping the NPU override is intended.
  Omni's method, verbatim, with a comment naming the entry.
- ``npu-wrapper``: the NPU override wraps ``super()``; omni's replaces the body. The NPU
  wrapper around omni's override (``wrap``).
- ``npu-splice``: neither delegates and omni's override is a copy of vLLM's method: omni's
  hunks against vLLM placed in the NPU body by the sync engine.
- otherwise a conflict (OP324): omni's method stays, under a conflict region that says why.
  An omni override that does not use the runner at all (``torch.accelerator.synchronize()``
  for ``profile_run``) is a deliberate skip: wrapping it would run the NPU steps it skips.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from omni_port.gpu.parity import AllowEntry
from omni_port.gpu.vllm_delta import CopiedMethod, Delta
from omni_port.model import Rule, Stmt, Tree
from omni_port.pyast import diff
from omni_port.v2 import wrap
from omni_port.v2.overrides import MethodRow, OverrideReport, Who

#: A "copy" of a vLLM method that keeps fewer of its statements than this replaces the
#: method: one shared ``synchronize()`` call is no delta that could move onto another body.
KEPT_FLOOR = 2


@dataclass(frozen=True, slots=True)
class Npu:
    """The NPU runner module as the decisions read it."""

    text: str
    class_name: str
    #: Release label and module path, for comments and reports.
    label: str
    path: str


@dataclass(frozen=True, slots=True)
class Composed:
    """How one method both runner families override is composed."""

    module: str
    #: The omni class whose definition the decision is about.
    owner: str
    row: MethodRow
    #: The rule that composed it; None when it could not be (a conflict).
    rule: Rule | None
    #: Why: the rule's reading of the two overrides, or what blocks every rule.
    reason: str
    allow: AllowEntry | None = None

    @property
    def name(self) -> str:
        return self.row.name


def decide(
    delta: Delta, report: OverrideReport, npu: Npu, allowed: Sequence[AllowEntry] = ()
) -> dict[tuple[str, str], Composed]:
    """The composition of every method both sides override, by (omni class, method)."""
    modules = _class_modules(delta.trees)
    copies = {(m.copy.owner, m.copy.name): m for m in delta.methods}
    functions = _Functions(delta.trees)
    npu_methods = wrap.npu_methods(npu.text, npu.class_name)
    decided: dict[tuple[str, str], Composed] = {}
    for row in _rows(report):
        assert row.omni is not None
        owner = row.omni.last[0]
        if (owner, row.name) in decided or owner not in modules:
            continue
        module = modules[owner]
        allow = allow_of(allowed, module, owner, row.name)
        rule, reason = _rule(
            row, allow, _Sides(functions.get(module, owner, row.name), npu, npu_methods)
        )
        if rule is Rule.NPU_SPLICE:
            rule, reason = _splice(copies.get((owner, row.name)), delta.trees[module], reason)
        decided[(owner, row.name)] = Composed(module, owner, row, rule, reason, allow)
    return decided


def rule_for(
    row: MethodRow, allow: AllowEntry | None, omni: cst.FunctionDef | None, npu: Npu
) -> tuple[Rule | None, str]:
    """The rule that composes one method both sides override (``npu-splice`` is only a
    candidate: it holds when omni's override is a copy the sync engine can move), and why."""
    return _rule(row, allow, _Sides(omni, npu, wrap.npu_methods(npu.text, npu.class_name)))


def _rows(report: OverrideReport) -> Iterator[MethodRow]:
    for runner in report.runners:
        for row in runner.rows:
            if row.who is Who.BOTH and row.omni is not None and row.npu is not None:
                yield row


@dataclass(frozen=True, slots=True)
class _Sides:
    omni: cst.FunctionDef | None
    npu: Npu
    npu_methods: frozenset[str]


def _rule(row: MethodRow, allow: AllowEntry | None, sides: _Sides) -> tuple[Rule | None, str]:
    npu_class = sides.npu.class_name
    assert row.omni is not None and row.npu is not None
    if row.omni.delegates:
        return Rule.OMNI_SUPER, f"omni's {row.name} calls super(), which reaches {npu_class}'s"
    if allow is not None:
        return Rule.ALLOWED, f"{allow.reason} ({allow.path}:{allow.line})"
    if not row.npu.delegates:
        return Rule.NPU_SPLICE, f"both replace vLLM's {row.name}"
    omni = sides.omni
    if omni is None:
        return None, f"omni's {row.name} cannot be read with libcst"
    if not _uses_runner(omni):
        return None, (
            f"omni's {row.name} does not use the runner (a deliberate skip): wrapping it would "
            f"run the NPU steps of {npu_class}.{row.name} around nothing"
        )
    npu = wrap.npu_method(sides.npu.text, npu_class, row.name)
    if npu is None:
        return None, f"{npu_class}.{row.name} cannot be read with libcst"
    if wrap.body_name(row.name) in sides.npu_methods:
        return None, f"{npu_class} already defines {wrap.body_name(row.name)}"
    why = wrap.unwrappable(wrap.Wrapping(npu, row.name, sides.npu_methods), omni)
    if why:
        return None, f"{npu_class}.{row.name} wraps super() but cannot go around omni's: {why}"
    return Rule.NPU_WRAPPER, (
        f"{npu_class}.{row.name} wraps super().{row.name}(); it runs omni's {row.name} "
        f"(renamed {wrap.body_name(row.name)}) there"
    )


def _splice(copied: CopiedMethod | None, tree: Tree, reason: str) -> tuple[Rule | None, str]:
    if copied is not None and kept(copied, tree) >= KEPT_FLOOR:
        return Rule.NPU_SPLICE, f"{reason}: omni's hunks against vLLM placed in the NPU body"
    return None, (
        f"{reason} and omni's keeps too little of vLLM's body for its hunks to move onto the "
        "NPU's: compose them by hand, or allow-list the method to keep omni's"
    )


def _uses_runner(function: cst.FunctionDef) -> bool:
    """Whether the body reads ``self`` or calls ``super()``."""
    found = []

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in ("self", "super"):
                found.append(node)

    function.body.visit(_Visitor())
    return bool(found)


def kept(copied: CopiedMethod, tree: Tree) -> int:
    """vLLM statements the copy keeps, in order; a leading docstring is no statement."""
    from omni_port.gpu.vllm_delta import class_method

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


def allow_of(
    allowed: Sequence[AllowEntry], module: str, owner: str, name: str, selector: str = ""
) -> AllowEntry | None:
    """The entry that keeps omni's ``owner.name`` of ``module``; with ``selector``, the one
    that also names that part of it (a bypassed NPU override, a guarded NPU step)."""
    return next(
        (
            a
            for a in allowed
            if (a.module, a.owner, a.member, a.selector) == (module, owner, name, selector)
        ),
        None,
    )


def _class_modules(trees: Mapping[str, Tree]) -> dict[str, str]:
    return {
        stmt.name: module
        for module, tree in sorted(trees.items())
        for stmt in tree.body.stmts
        if stmt.kind == "ClassDef"
    }


class _Functions:
    """Omni's methods as libcst parses them, each module parsed once."""

    def __init__(self, trees: Mapping[str, Tree]) -> None:
        self.trees = trees
        self.parsed: dict[str, cst.Module | None] = {}

    def get(self, module: str, owner: str, name: str) -> cst.FunctionDef | None:
        if module not in self.parsed:
            text = "".join(line + "\n" for line in self.trees[module].lines)
            try:
                self.parsed[module] = cst.parse_module(text)
            except cst.ParserSyntaxError:
                self.parsed[module] = None
        parsed = self.parsed[module]
        return method_of(parsed, owner, name) if parsed is not None else None


def method_of(module: cst.Module, owner: str, name: str) -> cst.FunctionDef | None:
    """The first ``def name`` of class ``owner`` at the top of a parsed module."""
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == owner:
            body = stmt.body
            members = body.body if isinstance(body, cst.IndentedBlock) else ()
            for member in members:
                if isinstance(member, cst.FunctionDef) and member.name.value == name:
                    return member
    return None
