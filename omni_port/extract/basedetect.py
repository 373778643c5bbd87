"""Which upstream release were the runners ported from? The one their copied code matches best.

A runner method that overrides an upstream method is compared, minus its marked blocks,
with that method in each candidate release; the score of a release is the share of the
runners' own statements it contains, over the methods that are copies at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.extract.markers import scan
from omni_port.pyast.diff import containment, flat_keys
from omni_port.pyast.syntax import Stmt, Suite, Tree, find_def

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


def rank(
    runners: Sequence[Tree], candidates: Mapping[str, Tree], upstream_class: str = "NPUModelRunner"
) -> list[BaseScore]:
    """Candidates ranked best first (ties broken by label, so the result is stable)."""
    own = [(name, keys) for tree in runners for _, name, keys in own_methods(tree)]
    scores = []
    for label, tree in candidates.items():
        methods = _upstream_methods(tree, upstream_class)
        matched = total = 0
        for name, keys in own:
            upstream = methods.get(name)
            if upstream is None or len(keys) < 2:
                continue
            share = containment(keys, upstream)
            if share >= COPY_FLOOR:
                matched += round(share * len(keys))
                total += len(keys)
        scores.append(BaseScore(label, matched / total if total else 0.0, total))
    return sorted(scores, key=lambda s: (-s.similarity, s.label))


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


def _upstream_methods(tree: Tree, upstream_class: str) -> dict[str, list[str]]:
    cls: Stmt | None = find_def(tree.body, upstream_class)
    if cls is None or not cls.clauses:
        return {}
    return {m.name: flat_keys(m.clauses[0]) for m in cls.clauses[0].stmts if m.name}
