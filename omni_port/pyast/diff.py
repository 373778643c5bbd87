"""Statement-level alignment of two versions of a body, and statement similarity."""

from __future__ import annotations

import difflib
import itertools
import keyword
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from omni_port.pyast import memo
from omni_port.pyast.syntax import Stmt, Suite, full_key

#: Compound statements whose headers are at least this similar are the same statement
#: edited, when exact keys do not pair them.
COMPOUND_MATCH = 0.6

_TOKEN = re.compile(
    r"""
    '[^']*'         # a normalized string literal (ast.unparse uses single quotes)
    | \w+           # an identifier or number
    | [^\w\s]       # any other single character
    """,
    re.VERBOSE,
)


#: Tokens that every statement shares and that say nothing about which statement it is.
_GENERIC = frozenset(keyword.kwlist) | {"self", "None", "True", "False"}


@memo.memoized
def tokens(key: str) -> tuple[str, ...]:
    """The tokens that identify a statement: names, attributes, numbers and strings.

    Punctuation and keywords are left out: ``if self.a is not None:`` and
    ``if self.b is not None:`` share every one of those and are different statements.
    A statement made only of generic tokens keeps them all.
    """
    every = _TOKEN.findall(key)
    significant = [t for t in every if (t[0].isalnum() or t[0] in "_'") and t not in _GENERIC]
    if not significant:
        return tuple(every)
    # Names compare by their parts: a rename such as set_forward_context ->
    # set_ascend_forward_context keeps most of them.
    return tuple(
        part for t in significant for part in (t.split("_") if t[0] != "'" else [t]) if part
    )


#: A field declaration ``name: annotation`` (no value), as ``ast.unparse`` writes it.
_FIELD = re.compile(r"^(?P<name>[A-Za-z_]\w*): [^=]+$")
#: Similarity of two declarations of one field whose annotations differ.
SAME_FIELD = 0.9


@memo.memoized
def similarity(a: str, b: str) -> float:
    """Similarity of two normalized statements in [0, 1]; 1.0 only when equal.

    Two declarations of one field (``x: T`` and ``x: U``) are the same field re-typed.
    """
    if a == b:
        return 1.0
    field_a, field_b = _FIELD.match(a), _FIELD.match(b)
    if field_a and field_b and field_a.group("name") == field_b.group("name"):
        return SAME_FIELD
    ta, tb = tokens(a), tokens(b)
    labels_a = {t for t in ta if t.startswith("'") and len(t) > 4}
    # A shared string label such as 'post process' identifies a statement strongly.
    floor = 0.85 if labels_a & {t for t in tb if t.startswith("'")} else 0.0
    if _quick_ratio(ta, tb) * (len(ta) + len(tb)) / 2 < 0.3 * min(len(ta), len(tb)):
        return floor
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    ratio = 2 * matched / (len(ta) + len(tb))
    # A statement that gained or lost arguments upstream is still the same statement:
    # count how much of the shorter one survives in the longer one, too.
    containment = matched / min(len(ta), len(tb))
    ratio = max(ratio, (ratio + containment) / 2, floor)
    return min(ratio, 0.99)


def _quick_ratio(a: Sequence[str], b: Sequence[str]) -> float:
    """``difflib.SequenceMatcher(None, a, b).quick_ratio()``, the same float, without
    indexing ``b`` for the full match: three pairs in four stop at this bound."""
    left = Counter(b)
    matches = 0
    for token in a:
        if left[token] > 0:
            left[token] -= 1
            matches += 1
    length = len(a) + len(b)
    return 2.0 * matches / length if length else 1.0


@dataclass(frozen=True, slots=True)
class SuiteMatch:
    """How the statements of an old body pair with those of a new body."""

    old: Suite
    new: Suite
    #: (old index, new index) of paired statements, increasing in both.
    pairs: tuple[tuple[int, int], ...]
    #: Alignments of the clauses of paired compound statements.
    children: tuple[SuiteMatch, ...]

    def new_to_old(self) -> dict[int, int]:
        return {new: old for old, new in self.pairs}

    def child_for(self, new_suite: Suite) -> SuiteMatch | None:
        return next((c for c in self.children if c.new is new_suite), None)

    def gaps(self) -> Iterator[tuple[range, range]]:
        """Runs of unpaired statements: (old index range, new index range) between pairs."""
        previous = (-1, -1)
        for pair in (*self.pairs, (len(self.old.stmts), len(self.new.stmts))):
            old_run = range(previous[0] + 1, pair[0])
            new_run = range(previous[1] + 1, pair[1])
            if old_run or new_run:
                yield old_run, new_run
            previous = pair


def align(
    old: Suite,
    new: Suite,
    pinned: Callable[[Stmt], bool] = lambda s: False,
    fences: Callable[[Stmt], bool] = lambda s: True,
) -> SuiteMatch:
    """Pair statements of ``old`` and ``new`` bodies, recursively.

    Statements pair by equal normalized keys (longest matching runs first), then compound
    statements of one kind pair by similar headers inside the remaining gaps. A ``pinned``
    new statement (part of a marked block) is omni code by declaration; one that
    ``fences`` may still pair with its verbatim twin (``_fenced``): maintainers' markers
    often fence upstream code beside their own.
    """
    fenced = _fenced(old, new, lambda s: pinned(s) and fences(s))
    old_keys = [s.key for s in old.stmts]
    new_keys = [
        s.key if n in fenced or not pinned(s) else f"\0{n}" for n, s in enumerate(new.stmts)
    ]

    # A compound statement whose clauses were added, removed or relabelled is not the same
    # statement: pairing it would silently keep upstream's clause structure.
    def same(o: int, n: int) -> bool:
        if n in fenced and fenced[n] != full_key(old.stmts[o]):
            return False
        return same_clauses(old.stmts[o], new.stmts[n])

    exact = _matching(old_keys, new_keys, same)
    exact = _slide_repeats(exact, old_keys, new_keys, same)
    pairs = sorted(exact + list(_compound_pairs(old.stmts, new.stmts, exact, pinned)))
    children = tuple(
        child
        for o, n in pairs
        for child in _align_clauses(old.stmts[o], new.stmts[n], pinned, fences, n in fenced)
    )
    return SuiteMatch(old, new, tuple(pairs), children)


def _free(stmt: Stmt) -> bool:
    """Nothing is pinned (inside a verbatim twin, every statement is upstream's)."""
    return False


def _fenced(old: Suite, new: Suite, pinned: Callable[[Stmt], bool]) -> dict[int, str]:
    """Pinned new statements that are upstream code held verbatim, by index, with their
    full keys: each the one statement of its full key in both bodies, so that pairing it
    with its twin is no choice between copies."""
    if not any(pinned(s) for s in new.stmts):
        return {}
    old_count = Counter(full_key(s) for s in old.stmts)
    new_keys = [full_key(s) for s in new.stmts]
    new_count = Counter(new_keys)
    return {
        n: key
        for n, (stmt, key) in enumerate(zip(new.stmts, new_keys, strict=True))
        if pinned(stmt) and old_count[key] == 1 and new_count[key] == 1
    }


#: Largest body pair (old x new statements) for an exact longest-common-subsequence pass.
LCS_CELLS = 40_000


def _matching(
    old_keys: Sequence[str], new_keys: Sequence[str], same: Callable[[int, int], bool]
) -> list[tuple[int, int]]:
    """Equal keys paired in order, longest matching runs first (difflib).

    Around repeated statements difflib's runs can strand a statement on both sides (old
    ``a a a`` against new ``a X a a`` pairs two); then the longest common subsequence
    pairs them all, if the bodies are small enough to afford it.
    """
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    pairs = [
        (block.a + k, block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
        if same(block.a + k, block.b + k)
    ]
    if _stranded(pairs, old_keys, new_keys) and len(old_keys) * len(new_keys) <= LCS_CELLS:
        longest = _longest_common(old_keys, new_keys, same)
        if len(longest) > len(pairs):
            return longest
    return pairs


def _stranded(
    pairs: Sequence[tuple[int, int]], old_keys: Sequence[str], new_keys: Sequence[str]
) -> bool:
    """Whether some key is left unpaired on both sides."""
    old_paired = {o for o, _ in pairs}
    new_paired = {n for _, n in pairs}
    old_left = {k for i, k in enumerate(old_keys) if i not in old_paired}
    return any(k in old_left for i, k in enumerate(new_keys) if i not in new_paired)


def _longest_common(
    old_keys: Sequence[str], new_keys: Sequence[str], same: Callable[[int, int], bool]
) -> list[tuple[int, int]]:
    """A longest sequence of in-order pairs of equal keys (dynamic programming)."""
    rows, cols = len(old_keys), len(new_keys)

    def equal(o: int, n: int) -> bool:
        return old_keys[o] == new_keys[n] and same(o, n)

    # table[o][n]: length of the longest common subsequence of old[o:] and new[n:].
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for o in range(rows - 1, -1, -1):
        row, below = table[o], table[o + 1]
        for n in range(cols - 1, -1, -1):
            row[n] = below[n + 1] + 1 if equal(o, n) else max(below[n], row[n + 1])
    pairs: list[tuple[int, int]] = []
    o = n = 0
    while o < rows and n < cols:
        if equal(o, n) and table[o][n] == table[o + 1][n + 1] + 1:
            pairs.append((o, n))
            o, n = o + 1, n + 1
        elif table[o + 1][n] >= table[o][n + 1]:
            o += 1
        else:
            n += 1
    return pairs


def _slide_repeats(
    pairs: list[tuple[int, int]],
    old_keys: Sequence[str],
    new_keys: Sequence[str],
    same: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """Move pairs of repeated statements to the copy that pairs the most, in fewest gaps.

    difflib pairs a repeated statement with its first copy, which can strand the
    statements between the copies (paired as omni insertions and upstream deletions). The
    largest pairing is the true one; among equally large ones, the one with the fewest
    runs of unpaired code is the smallest edit, as a diff tool would show it.
    """
    result = list(pairs)
    at = 0
    while at < len(result):
        o, n = result[at]
        low = result[at - 1][0] + 1 if at else 0
        high = result[at + 1][0] if at + 1 < len(result) else len(old_keys)
        choices = [c for c in range(low, high) if old_keys[c] == old_keys[o] and same(c, n)]
        if len(choices) > 1:
            options = [_moved(result, at, c, old_keys, new_keys, same) for c in choices]
            ranks = [(len(x), -_gap_count(x, len(old_keys), len(new_keys))) for x in options]
            best = max(range(len(options)), key=lambda i: (ranks[i], choices[i] == o))
            result = options[best]
            at = result.index((choices[best], n))
        at += 1
    return result


def _moved(
    pairs: Sequence[tuple[int, int]],
    at: int,
    old_index: int,
    old_keys: Sequence[str],
    new_keys: Sequence[str],
    same: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """``pairs`` with pair ``at`` moved to ``old_index`` and its two gaps paired again."""
    left = pairs[at - 1] if at else (-1, -1)
    right = pairs[at + 1] if at + 1 < len(pairs) else (len(old_keys), len(new_keys))
    moved = (old_index, pairs[at][1])
    return [
        *pairs[: max(at - 1, 0)],
        *([left] if at else []),
        *_gap_pairs(left, moved, old_keys, new_keys, same),
        moved,
        *_gap_pairs(moved, right, old_keys, new_keys, same),
        *pairs[at + 1 :],
    ]


def _gap_pairs(
    left: tuple[int, int],
    right: tuple[int, int],
    old_keys: Sequence[str],
    new_keys: Sequence[str],
    same: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    o0, n0 = left[0] + 1, left[1] + 1
    found = _matching(old_keys[o0 : right[0]], new_keys[n0 : right[1]], lambda o, n: True)
    return [(o0 + o, n0 + n) for o, n in found if same(o0 + o, n0 + n)]


def _gap_count(pairs: Sequence[tuple[int, int]], old_count: int, new_count: int) -> int:
    """Runs of unpaired statements (on either side) between consecutive pairs."""
    bounds = [(-1, -1), *pairs, (old_count, new_count)]
    return sum(1 for (o1, n1), (o2, n2) in itertools.pairwise(bounds) if o2 - o1 > 1 or n2 - n1 > 1)


def _compound_pairs(
    old: Sequence[Stmt],
    new: Sequence[Stmt],
    exact: list[tuple[int, int]],
    pinned: Callable[[Stmt], bool],
) -> Iterator[tuple[int, int]]:
    previous = (-1, -1)
    for pair in (*exact, (len(old), len(new))):
        used_old = previous[0]
        for n in range(previous[1] + 1, pair[1]):
            if not new[n].clauses or pinned(new[n]):
                continue
            best = _best_compound(old, range(used_old + 1, pair[0]), new[n])
            if best is not None:
                yield best, n
                used_old = best
        previous = pair


def same_clauses(old: Stmt, new: Stmt) -> bool:
    """Whether two statements have the same clauses (main body, then the same labels)."""
    return [c.label for c in old.clauses] == [c.label for c in new.clauses]


def _best_compound(old: Sequence[Stmt], candidates: range, stmt: Stmt) -> int | None:
    scored = [
        (similarity(old[o].key, stmt.key), o)
        for o in candidates
        if old[o].kind == stmt.kind and old[o].clauses and same_clauses(old[o], stmt)
    ]
    good = [(score, o) for score, o in scored if score >= COMPOUND_MATCH]
    return max(good)[1] if good else None


def _align_clauses(
    old: Stmt,
    new: Stmt,
    pinned: Callable[[Stmt], bool],
    fences: Callable[[Stmt], bool],
    verbatim: bool,
) -> Iterator[SuiteMatch]:
    """The clauses' alignments; inside a verbatim twin nothing is pinned."""
    used: set[int] = set()
    for clause in new.clauses:
        index = _clause_index(old.clauses, clause, used)
        if index is not None:
            used.add(index)
            yield align(old.clauses[index], clause, _free if verbatim else pinned, fences)


def _clause_index(clauses: Sequence[Suite], clause: Suite, used: set[int]) -> int | None:
    for i, candidate in enumerate(clauses):
        if i not in used and candidate.label == clause.label:
            return i
    scored = [
        (similarity(candidate.label, clause.label), i)
        for i, candidate in enumerate(clauses)
        if i not in used and candidate.label and clause.label
    ]
    good = [(score, i) for score, i in scored if score >= COMPOUND_MATCH]
    return max(good)[1] if good else None


def flat_keys(suite: Suite) -> list[str]:
    """Keys of every statement under ``suite`` in source order."""
    keys: list[str] = []
    for stmt in suite.stmts:
        keys.append(stmt.key)
        for clause in stmt.clauses:
            keys.extend(flat_keys(clause))
    return keys


def containment(part: Sequence[str], whole: Sequence[str]) -> float:
    """Share of ``part`` found in order in ``whole`` (1.0 for an empty ``part``)."""
    if not part:
        return 1.0
    matcher = difflib.SequenceMatcher(None, list(part), list(whole), autojunk=False)
    return sum(b.size for b in matcher.get_matching_blocks()) / len(part)
