"""Which upstream release were the runners ported from? The one their copied code matches best.

A runner method that overrides an upstream method is compared, minus its marked blocks,
with that method in each candidate release; the score of a release is the share of the
runners' own statements it contains, over the methods that are copies at all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.extract.markers import scan
from omni_port.model import Suite, Tree
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
class Piece:
    """A runner method whose copied code another candidate explains better than the best
    one: the hand port copied it from another revision."""

    method: str
    #: The candidate that explains it best, and its share of the method's statements.
    label: str
    share: float
    #: The best candidate's share of the method's statements.
    at_best: float


def rank(runners: Sequence[Tree], candidates: Mapping[str, MethodKeys]) -> list[BaseScore]:
    """Candidates (each as the keys of its upstream class's methods: ``method_keys``)
    ranked best first (ties broken by label, so the result is stable)."""
    own = [(name, keys) for tree in runners for _, name, keys in own_methods(tree)]
    scores = []
    for label, methods in candidates.items():
        matched = total = held = size = 0
        for name, keys in own:
            upstream = methods.get(name)
            if upstream is None or len(keys) < 2:
                continue
            share = containment(keys, upstream)
            if share >= COPY_FLOOR:
                matched += round(share * len(keys))
                total += len(keys)
                held += round(containment(upstream, keys) * len(upstream))
                size += len(upstream)
        similarity = matched / total if total else 0.0
        scores.append(BaseScore(label, similarity, total, coverage=held / size if size else 0.0))
    return sorted(scores, key=lambda s: (-s.similarity, s.label))


#: How much more of a method another candidate must explain for a piecewise port.
PIECE = 0.05


def pieces(runners: Sequence[Tree], candidates: Mapping[str, MethodKeys], best: str) -> list[Piece]:
    """The runner methods another candidate explains clearly better than ``best`` (by
    ``PIECE``), the best of those candidates for each, in method order."""
    found = []
    for _, name, keys in (m for tree in runners for m in own_methods(tree)):
        shares = {
            label: containment(keys, methods[name])
            for label, methods in sorted(candidates.items())
            if name in methods and len(keys) >= 2
        }
        if best not in shares or shares[best] < COPY_FLOOR:
            continue
        label, share = max(shares.items(), key=lambda pair: pair[1])
        if share >= shares[best] + PIECE:
            found.append(Piece(name, label, share, shares[best]))
    return found


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
    return {
        n.name: _flat(n.body)
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }


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
