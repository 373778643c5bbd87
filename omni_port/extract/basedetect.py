"""Which upstream release were the runners ported from? The one their copied code matches best.

A runner method that overrides an upstream method is compared, minus its marked blocks,
with that method in each candidate release; the score of a release is the share of the
runners' own statements it contains, over the methods that are copies at all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from omni_port.extract.markers import scan
from omni_port.model import Suite, Tree
from omni_port.pyast import memo
from omni_port.pyast.diff import containment
from omni_port.pyast.parser import module_or_none
from omni_port.pyast.syntax import node_key

#: The keys of each method of a class, by method name (what a candidate is ranked by).
MethodKeys = Mapping[str, Sequence[str]]

#: A method whose statements are less than this share of an upstream method's is no copy.
COPY_FLOOR = 0.4


@dataclass(frozen=True, slots=True)
class BaseScore:
    """How well one candidate release explains the runners' copied code."""

    label: str
    #: Share of the copied statements found in the candidate, in [0, 1].
    similarity: float
    #: Statements compared.
    statements: int
    #: The branch of a clone the candidate is a commit of ("" for a release).
    lineage: str = ""
    #: Share of the candidate's statements in the methods the runners copy that the
    #: runners hold: of two candidates that explain the runners alike, the one with less
    #: upstream code they lack (what came after the copy was made).
    coverage: float = 0.0


@dataclass(frozen=True, slots=True)
class PiecewiseMethod:
    """A runner method whose copied code another candidate explains better than the best
    one: the hand port copied it from another revision (another release, another branch,
    or code the best one's line had already replaced)."""

    #: The runner class and method.
    owner: str
    method: str
    #: Statements of the method compared (outside marked regions).
    statements: int
    #: The candidate that explains most of them, its lineage ("" for a release), and how
    #: many of them it holds.
    label: str
    lineage: str
    matched: int
    #: The best candidate, and how many of them it holds.
    best: str
    at_best: int

    def __str__(self) -> str:
        on = f" on {self.lineage}" if self.lineage else ""
        return (
            f"{self.owner}.{self.method} matches {self.label}{on} ({self.matched} of "
            f"{self.statements} statements) better than {self.best} ({self.at_best})"
        )


def rank(runners: Sequence[Tree], candidates: Mapping[str, MethodKeys]) -> list[BaseScore]:
    """Candidates (each as the keys of its upstream class's methods: ``method_keys``),
    ranked best first.

    Of candidates that explain the runners alike, the one with less upstream code in the
    copied methods that the runners lack (``coverage``: code that came after the copy),
    then the one given last: the releases between them changed nothing the runners
    copied, and the caller orders them by which would date the port best (``api``: the
    release nearest the runners' release day, or the newest)."""
    own = [(name, keys) for tree in runners for _, name, keys in own_methods(tree)]
    scores = []
    for label, methods in candidates.items():
        matched = total = held = size = 0
        for name, keys in own:
            upstream = methods.get(name)
            if upstream is None or not _code(keys):
                continue
            share = containment(keys, upstream)
            if share >= COPY_FLOOR:
                matched += round(share * len(keys))
                total += len(keys)
                held += round(containment(upstream, keys) * len(upstream))
                size += len(upstream)
        similarity = matched / total if total else 0.0
        scores.append(BaseScore(label, similarity, total, coverage=held / size if size else 0.0))
    newest = {label: -position for position, label in enumerate(candidates)}
    return sorted(scores, key=lambda s: (-s.similarity, -s.coverage, newest[s.label]))


def _code(keys: Sequence[str]) -> bool:
    """Whether a method has two statements besides a docstring: fewer tell nothing of
    where it was copied from. vLLM-Omni's V2 Code2Wav ``profile_run`` (a docstring and
    ``torch.accelerator.synchronize()``, a deliberate skip) held one of its two statements
    in every vLLM release, and ranked releases that hold no copy of ``execute_model``
    first, "50% of 2 statements" (``extractor`` sets docstrings aside alike)."""
    return sum(1 for key in keys if key[:1] not in ("'", '"')) >= 2


#: How many more of a method's statements another candidate must hold for a piecewise port:
#: one could be omni's own edit that upstream happened to make too.
PIECE = 2


def pieces(
    runners: Sequence[Tree], candidates: Mapping[str, MethodKeys], ranked: Sequence[BaseScore]
) -> list[PiecewiseMethod]:
    """The runner methods another candidate explains better than the best of ``ranked``
    (it holds at least ``PIECE`` more of the method's statements), in method order; of the
    candidates that hold the most, the best ranked is named."""
    if not ranked:
        return []
    best = ranked[0]
    order = [s for s in ranked if s.label in candidates]
    found = []
    for owner, name, keys in (m for tree in runners for m in own_methods(tree)):
        held = {s.label: _held(keys, candidates[s.label].get(name)) for s in order}
        at_best = held.get(best.label, 0)
        most = max(held.values(), default=0)
        # A method no candidate holds COPY_FLOOR of is no copy (omni's own, same name).
        if len(keys) < 2 or most < COPY_FLOOR * len(keys) or most - at_best < PIECE:
            continue
        top = next(s for s in order if held[s.label] == most)
        found.append(
            PiecewiseMethod(
                owner, name, len(keys), top.label, top.lineage, most, best.label, at_best
            )
        )
    return found


def _held(keys: Sequence[str], upstream: Sequence[str] | None) -> int:
    """How many of ``keys`` (in order) ``upstream`` holds."""
    return round(containment(keys, upstream) * len(keys)) if upstream else 0


def own_methods(tree: Tree) -> Iterator[tuple[str, str, list[str]]]:
    """(class, method, keys of its statements outside marked regions) of every class."""
    pinned: set[int] = set()
    for region in scan(tree).regions:
        pinned.update(range(region.opener.line, region.closer.line + 1))
    for cls in tree.body.stmts:
        if cls.kind != "ClassDef" or not cls.clauses:
            continue
        for member in cls.clauses[0].stmts:
            if member.kind in ("FunctionDef", "AsyncFunctionDef"):
                yield cls.name, member.name, _keys_outside(member.clauses[0], pinned)


def _keys_outside(suite: Suite, pinned: set[int]) -> list[str]:
    keys: list[str] = []
    for stmt in suite.stmts:
        if stmt.start not in pinned:
            keys.append(stmt.key)
        for clause in stmt.clauses:
            keys.extend(_keys_outside(clause, pinned))
    return keys


def method_keys(text: str, upstream_class: str = "NPUModelRunner") -> dict[str, list[str]]:
    """The keys of every statement of each method of ``upstream_class`` in ``text``, in
    source order, as a statement tree gives them (``flat_keys``), read with ``ast`` alone:
    ranking many revisions of a module costs a parse of each, and the statement tree's
    full parse is ten times ``ast``'s. Empty when the text does not parse or lacks it."""
    module = module_or_none(text)  # every statement's key is unparsed: walked
    if module is None:
        return {}
    cls = next(
        (n for n in module.body if isinstance(n, ast.ClassDef) and n.name == upstream_class),
        None,
    )
    if cls is None:
        return {}
    lines = text.split("\n")
    return {
        n.name: _method_body_keys(n, lines)
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _method_body_keys(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> list[str]:
    """``_flat`` of the method's body, kept for the run by the method's lines: most of a
    method's thirty releases leave it alone, and its keys (every statement unparsed) cost
    as much as parsing the module."""
    answers = memo.table(_KEYS_TABLE)
    if answers is None:
        return _flat(node.body)
    code = "\n".join(lines[node.lineno - 1 : node.end_lineno])
    if code not in answers:
        answers[code] = tuple(_flat(node.body))
    return list(cast("tuple[str, ...]", answers[code]))


#: The run's table of method keys, by the method's lines (``_method_body_keys``).
_KEYS_TABLE = "basedetect.method_body_keys"


def _flat(nodes: Sequence[ast.stmt]) -> list[str]:
    """Keys of ``nodes`` and of every statement in their bodies, in source order; the
    branches of an ``if``/``elif`` chain are clauses of its first ``if``, as in a statement
    tree."""
    keys: list[str] = []
    for node in nodes:
        keys.append(node_key(node))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            keys.extend(_flat(body))
        for handler in getattr(node, "handlers", None) or ():
            keys.extend(_flat(handler.body))
        for case in getattr(node, "cases", None) or ():
            keys.extend(_flat(case.body))
        keys.extend(_clauses(node))
    return keys


def _clauses(node: ast.stmt) -> list[str]:
    """Keys of the ``elif``/``else`` and ``finally`` bodies of ``node``."""
    keys: list[str] = []
    orelse: list[ast.stmt] = list(getattr(node, "orelse", None) or ())
    current = node
    # An ``elif`` is an ``if`` in ``orelse`` at the column of its ``if``.
    while (
        isinstance(current, ast.If)
        and len(orelse) == 1
        and isinstance(orelse[0], ast.If)
        and orelse[0].col_offset == current.col_offset
    ):
        current = orelse[0]
        keys.extend(_flat(current.body))
        orelse = list(current.orelse)
    keys.extend(_flat(orelse))
    keys.extend(_flat(getattr(node, "finalbody", None) or ()))
    return keys
