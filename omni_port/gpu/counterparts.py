"""Where the other runner family's code for a method is, and whether it carries an item.

The code a class runs for a method is its override and whatever that delegates to through
``super()`` or an explicit ``Class.method(self, ...)``, in C3 order over the classes of
both families; a method inherited from the other family carries every item of it.
"""

from __future__ import annotations

import ast
import enum
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from omni_port.extract.markers import scan
from omni_port.gpu.evidence import LEX, Item, ItemKind, flat, words
from omni_port.model import Stmt, Tree
from omni_port.pyast import diff
from omni_port.pyast.packages import c3_linearization
from omni_port.pyast.syntax import find_def

#: Statements at least this similar are the same statement (renamed locals, an argument).
SAME = 0.8
#: A statement this similar to an edited one is its counterpart on the other side.
RELATED = 0.5
#: Share of a fragment's tokens a counterpart statement must hold to carry it.
FRAGMENT = 0.8
_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


class Parity(enum.StrEnum):
    """Whether the other runner family has a hunk (not to be confused with ``model.Parity``,
    the outcome of a piece in a sync)."""

    PRESENT = "present"
    """Every item is in the other family's override of the method."""
    INHERITED = "inherited"
    """The other family runs this very code (inherits it or delegates to it)."""
    PARTIAL = "partial"
    """Some items are missing."""
    MISSING = "missing"
    """No item is there."""
    ALLOWED = "allowed"
    """Missing items, all of them reviewed as fine (allow-list)."""


class Presence(enum.StrEnum):
    """Where the other family has an item it carries."""

    MARKED = "marked"
    """In one of its marked blocks."""
    UNMARKED = "unmarked"
    """In its own code outside any marker."""
    INHERITED = "inherited"
    """In code it inherits from the compared family."""
    ELSEWHERE = "elsewhere"
    """In another method of the class, not in the counterpart method."""


@dataclass(frozen=True, slots=True)
class KnownClass:
    name: str
    #: "gpu" or "npu".
    side: str
    stmt: Stmt
    bases: tuple[str, ...]
    #: Lines inside marked regions of its module.
    marked: frozenset[int]


#: Known classes of both families by name.
ClassIndex = Mapping[str, KnownClass]


@dataclass(frozen=True, slots=True)
class _Pooled:
    """A statement of the other family's code for a method."""

    key: str
    line: int
    #: Where in the other family's code the statement is.
    how: Presence


def index_classes(trees: Mapping[str, Tree], side: str) -> dict[str, KnownClass]:
    found: dict[str, KnownClass] = {}
    for tree in trees.values():
        marked = frozenset(
            line
            for region in scan(tree).regions
            for line in range(region.opener.line, region.closer.line + 1)
        )
        for stmt in tree.body.stmts:
            if stmt.kind == "ClassDef" and stmt.clauses:
                found[stmt.name] = KnownClass(stmt.name, side, stmt, _bases(stmt.key), marked)
    return found


def _bases(header: str) -> tuple[str, ...]:
    node = ast.parse(header + " pass").body[0]
    assert isinstance(node, ast.ClassDef)
    names = []
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(target, ast.Name | ast.Attribute):
            names.append(target.id if isinstance(target, ast.Name) else target.attr)
    return tuple(names)


def mro(name: str, index: ClassIndex) -> list[str]:
    """C3 linearization over the known classes; unknown bases are leaves."""
    known = index.get
    return c3_linearization(name, lambda n: c.bases if (c := known(n)) else (), lambda n: n)


def runner_class(tree: Tree) -> Stmt | None:
    """The module's runner class: the class with the most methods."""
    classes = [s for s in tree.body.stmts if s.kind == "ClassDef" and s.clauses]
    return max(classes, key=lambda c: sum(1 for m in c.clauses[0].stmts if m.name), default=None)


def _method(cls: KnownClass, name: str) -> Stmt | None:
    found = find_def(cls.stmt.clauses[0], name)
    return found if found is not None and found.kind in _DEF_KINDS else None


def calls_super(method: Stmt, name: str) -> bool:
    """Whether ``method`` delegates to the next class's ``name`` through ``super()``."""
    return f"super().{name}(" in "\n".join(diff.flat_keys(method.clauses[0]))


def resolve(start: str, name: str, index: ClassIndex) -> list[tuple[KnownClass, Stmt]]:
    """The known methods a call of ``start().name`` runs: the override and what it delegates to."""
    chain: list[tuple[KnownClass, Stmt]] = []
    pending = [(mro(start, index), 0)]
    while pending:
        order, at = pending.pop()
        for position in range(at, len(order)):
            cls = index.get(order[position])
            method = _method(cls, name) if cls is not None else None
            if cls is None or method is None or any(m is method for _, m in chain):
                continue
            chain.append((cls, method))
            text = "\n".join(diff.flat_keys(method.clauses[0]))
            if calls_super(method, name):
                pending.append((order, position + 1))
            for other in re.findall(rf"\b(\w+)\.{re.escape(name)}\(self\b", text):
                if other in index and other != cls.name:
                    pending.append((mro(other, index), 0))
            break
    return chain


class Pool:
    """Statements to look items up in, indexed by token so that most are never compared."""

    def __init__(self, entries: Sequence[_Pooled]) -> None:
        self.entries = tuple(entries)
        self.exact: dict[str, _Pooled] = {}
        self.counts: list[Counter[str]] = []
        self.by_token: dict[str, list[int]] = {}
        for number, entry in enumerate(self.entries):
            self.exact.setdefault(entry.key, entry)
            counts = Counter(diff.tokens(entry.key))
            self.counts.append(counts)
            for token in counts:
                self.by_token.setdefault(token, []).append(number)

    def scored(self, key: str, floor: float) -> list[tuple[float, _Pooled]]:
        """Entries at least ``floor`` similar to ``key``, best first (ties: source order)."""
        mine = Counter(diff.tokens(key))
        shared: Counter[int] = Counter()
        for token, count in mine.items():
            for number in self.by_token.get(token, ()):
                shared[number] += min(count, self.counts[number][token])
        size = sum(mine.values())
        labels = [t for t in mine if t.startswith("'") and len(t) > 4]
        found = []
        for number, matched in shared.items():
            counts = self.counts[number]
            label = any(t in counts for t in labels)
            if _bound(matched, size, sum(counts.values()), label) < floor:
                continue
            score = diff.similarity(key, self.entries[number].key)
            if score >= floor:
                found.append((score, number))
        found.sort(key=lambda sn: (-sn[0], sn[1]))
        return [(score, self.entries[number]) for score, number in found]

    def best(self, key: str, floor: float) -> _Pooled | None:
        exact = self.exact.get(key)
        if exact is not None:
            return exact
        scored = self.scored(key, floor)
        return scored[0][1] if scored else None


def _bound(matched: int, size_a: int, size_b: int, label: bool) -> float:
    """An upper bound of ``diff.similarity`` from the shared token count (and string labels)."""
    if not size_a or not size_b:
        return 1.0
    ratio = 2 * matched / (size_a + size_b)
    return max(ratio, (ratio + matched / min(size_a, size_b)) / 2, 0.85 if label else 0.0)


def method_pool(chain: Sequence[tuple[KnownClass, Stmt]], side: str) -> Pool:
    """The statements of the methods in ``chain``, seen from the family ``side``."""
    return Pool([p for cls, method in chain for p in _pooled(cls, method, side)])


def class_pool(start: str, index: ClassIndex, side: str) -> Pool:
    """Every method statement ``start`` actually runs (for code moved to another method)."""
    names = {
        member.name
        for name in mro(start, index)
        if (cls := index.get(name)) is not None
        for member in cls.stmt.clauses[0].stmts
        if member.kind in _DEF_KINDS
    }
    seen: set[int] = set()
    pooled: list[_Pooled] = []
    for name in sorted(names):
        for cls, method in resolve(start, name, index):
            if id(method) not in seen:
                seen.add(id(method))
                pooled.extend(
                    replace(p, how=Presence.ELSEWHERE) for p in _pooled(cls, method, side)
                )
    return Pool(pooled)


def _pooled(cls: KnownClass, method: Stmt, side: str) -> Iterator[_Pooled]:
    for stmt in [method, *flat(method)]:
        if cls.side != side:
            how = Presence.INHERITED
        else:
            how = Presence.MARKED if stmt.start in cls.marked else Presence.UNMARKED
        yield _Pooled(stmt.key, stmt.start, how)


# --- matching -----------------------------------------------------------------------------


def _holds(fragment: str, key: str) -> bool:
    want = words(fragment)
    have = Counter(t for t in LEX.findall(key) if t[0].isalnum() or t[0] in "_'\"")
    return sum((want & have).values()) >= FRAGMENT * sum(want.values())


def find(item: Item, pool: Pool) -> _Pooled | bool | None:
    """The pooled statement carrying ``item``; True when carried by absence; None if lacking."""
    if item.kind is ItemKind.STATEMENT:
        return pool.best(item.text, SAME)
    if item.kind is ItemKind.DELETED:
        return None if pool.best(item.text, SAME) is not None else True
    related = [p for _, p in pool.scored(item.stmt, RELATED)]
    if item.kind is ItemKind.ADDED:
        return next((p for p in related if _holds(item.text, p.key)), None)
    # Carried when the counterpart statement no longer holds the removed text.
    return True if not related or not _verbatim(item.text, related[0].key) else None


def _verbatim(fragment: str, key: str) -> bool:
    want, have = LEX.findall(fragment), LEX.findall(key)
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _trivial(item: Item) -> bool:
    """Too little to recognise out of place (``return None``, ``x = None``)."""
    return len(diff.tokens(item.text)) < 2


def status_of(
    items: Sequence[Item], pool: Pool, wider: Pool
) -> tuple[Parity, tuple[Item, ...], Presence | None]:
    """Found in the counterpart method, else (statements and additions) anywhere in its class."""
    missing: list[Item] = []
    how: Counter[Presence] = Counter()
    for item in items:
        found = find(item, pool)
        if found is None and item.kind in (ItemKind.STATEMENT, ItemKind.ADDED):
            found = None if _trivial(item) else find(item, wider)
        if found is None:
            missing.append(item)
        elif isinstance(found, _Pooled):
            how[found.how] += 1
    present_as = how.most_common(1)[0][0] if how else None
    if not missing:
        return Parity.PRESENT, (), present_as
    status = Parity.MISSING if len(missing) == len(items) else Parity.PARTIAL
    return status, tuple(missing), present_as
