"""Find where a block belongs in a new upstream method: score every place, keep a clear winner.

A place (slot) is a position in one body of the new method: before statement ``index``
(``index == len(body)`` is its end), optionally replacing ``span`` statements from there.
Each slot is scored on the block's anchor: the enclosing path, the nearest surviving
upstream neighbours before and after, the replaced statements, and the edge position.
The best slot wins only with a clear margin over the runner-up; a near tie between two
slots of one body with new upstream code between them is decided by data flow, and
otherwise stays a conflict. Nothing here guesses: every doubt is a conflict with its
candidates.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from omni_port.model import Anchor, Block, BlockKind, Edge, Resolution
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import Stmt, Suite, full_key, names_of, split_full_key, walk

#: Least score of an accepted place.
ACCEPT = 0.65
#: Least lead of the best place over the runner-up.
MARGIN = 0.08
#: Least similarity for two statements to count as the same statement changed.
FUZZY = 0.6
#: Least similarity for two headers on a path to count as the same compound statement.
PATH_FUZZY = 0.75
#: A path this similar to the anchor's names the same body (headers edited, not moved).
PATH_CERTAIN = 0.9
#: Path score of a place whose two old neighbours both stand right around it, in a body
#: upstream wrapped (or unwrapped): the gap is intact, only its depth changed.
PATH_INTACT = 0.75
#: Weight of the n-th nearest old neighbour when nearer ones vanished upstream.
DECAY = 0.8
#: Total lead, over all kinds of evidence, of a place that is nowhere worse than another.
DOMINANCE = 0.2
#: Weight left to a neighbour match when the nearest old neighbour sits on the other side.
CONTRADICTED = 0.5


@dataclass(frozen=True, slots=True)
class Slot:
    """A place in the new method."""

    suite: Suite
    path: tuple[str, ...]
    index: int
    #: Statements replaced from ``index`` on (0 for an insertion).
    span: int = 0

    def key(self) -> tuple[int, int, int]:
        return (id(self.suite), self.index, self.span)

    def line(self) -> int:
        """First line of the statement the slot is before (line after the body at its end)."""
        if self.index < len(self.suite.stmts):
            return self.suite.stmts[self.index].start
        return self.suite.stmts[-1].full_end + 1 if self.suite.stmts else 0

    def text(self) -> str:
        """The upstream statement at the slot, for reports."""
        if self.index < len(self.suite.stmts):
            return self.suite.stmts[self.index].key
        return "<end of " + (self.path[-1] if self.path else "method") + ">"


@dataclass(frozen=True, slots=True)
class Scored:
    slot: Slot
    score: float
    #: Similarity of the replaced statements found at the slot (1.0 for insertions).
    replaced: float
    #: The evidence behind ``score``: (replaced, path, previous, next).
    parts: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)

    def dominates(self, other: Scored) -> bool:
        """At least as good on every kind of evidence, and clearly better on some."""
        pairs = list(zip(self.parts, other.parts, strict=True))
        return all(a >= b for a, b in pairs) and sum(a - b for a, b in pairs) >= DOMINANCE


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a block goes, or why it is a conflict."""

    block: Block
    #: The chosen slot; for a conflict, the best candidate (None when there is none).
    slot: Slot | None
    score: float
    conflict: bool
    #: Best candidates, best first.
    candidates: tuple[Scored, ...]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class _Index:
    """Every body of the new method with its path, and every statement's location."""

    suites: tuple[tuple[tuple[str, ...], Suite], ...]
    #: key -> [(suite position in ``suites``, statement index)]
    by_key: dict[str, list[tuple[int, int]]]
    #: Keys the method has more than once.
    repeated: frozenset[str]


def _index(method: Stmt) -> _Index:
    suites = tuple((path, suite) for clause in method.clauses[:1] for path, suite in walk(clause))
    by_key: dict[str, list[tuple[int, int]]] = {}
    for position, (_, suite) in enumerate(suites):
        for i, stmt in enumerate(suite.stmts):
            by_key.setdefault(stmt.key, []).append((position, i))
    repeated = frozenset(key for key, places in by_key.items() if len(places) > 1)
    return _Index(suites, by_key, repeated)


def decide(method: Stmt, blocks: Sequence[Block]) -> list[Decision]:
    """A decision for every block of one copied member, in block order."""
    index = _index(method)
    decisions = [_decide(method, index, block) for block in blocks]
    return _resolve_overlaps(_settle_by_order(decisions))


def _decide(method: Stmt, index: _Index, block: Block) -> Decision:
    resolved = _resolution(index, block)
    if resolved is not None:
        return Decision(block, resolved, 1.0, False, (Scored(resolved, 1.0, 1.0),), "resolved")
    scored = sorted(_score_all(index, block), key=lambda s: (-s.score, s.slot.line(), s.slot.span))
    top = tuple(_distinct(scored))[:3]
    if not top:
        return Decision(
            block, None, 0.0, True, (), "no place in the new method resembles the anchor"
        )
    best = top[0]
    exact = [s for s in _distinct(scored) if block.anchor.replaced and s.replaced == 1.0]
    if len(exact) > 1 and all(s.parts[1] < PATH_CERTAIN for s in exact):
        # Upstream now has the replaced code in several bodies and none is the old one:
        # the block may belong at each, which is the maintainer's call.
        lines = ", ".join(str(s.slot.line()) for s in exact)
        reason = f"the statements it replaced occur at upstream lines {lines}, none in its old body"
        return Decision(block, exact[0].slot, exact[0].score, True, tuple(exact[:3]), reason)
    if best.score < ACCEPT:
        return Decision(
            block, best.slot, best.score, True, top, f"best place scores {best.score:.2f}"
        )
    if block.anchor.replaced and best.replaced < 1.0:
        reason = "the statements it replaced changed upstream"
        return Decision(block, best.slot, best.score, True, top, reason)
    if len(top) > 1 and not _clear_winner(best, top[1]):
        return _tie(method, block, top)
    return Decision(block, best.slot, best.score, False, top)


def _distinct(scored: Iterator[Scored] | list[Scored]) -> Iterator[Scored]:
    seen: set[tuple[int, int, int]] = set()
    for item in scored:
        if item.slot.key() not in seen:
            seen.add(item.slot.key())
            yield item


def bound_before(method: Stmt, slot: Slot) -> frozenset[str]:
    """Names bound in ``method`` by its parameters and by statements before ``slot``'s line."""
    names: set[str] = set()
    line = slot.line()
    for _, suite in walk(method.clauses[0]):
        for stmt in suite.stmts:
            if stmt.full_end < line and not stmt.clauses:
                names.update(stmt.writes)
    names.update(_parameters(method.key))
    return frozenset(names)


def _parameters(header: str) -> set[str]:
    """Parameter names of a def header (its key joins decorator lines with spaces)."""
    at = re.search(r"(?:^|\s)((?:async\s+)?def\s)", header)
    header = header[at.start(1) :] if at else header
    try:
        node = ast.parse(header + " ...").body[0]
    except SyntaxError:
        return set()
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    args = node.args
    every = [
        *args.posonlyargs,
        *args.args,
        *args.kwonlyargs,
        *(a for a in (args.vararg, args.kwarg) if a),
    ]
    return {a.arg for a in every}


def _tie(method: Stmt, block: Block, top: tuple[Scored, ...]) -> Decision:
    """Two places score alike: let data flow between the block and the code between them decide."""
    first, second = sorted(top[:2], key=lambda s: s.slot.index)
    if first.slot.suite is second.slot.suite and first.slot.span == second.slot.span == 0:
        between = first.slot.suite.stmts[first.slot.index : second.slot.index]
        side = _data_flow_side(block, between, bound_before(method, first.slot))
        if side is not None:
            chosen = second if side == "after" else first
            reason = f"upstream code between its old neighbours; data flow puts it {side} that code"
            return Decision(block, chosen.slot, chosen.score, False, top, reason)
    reason = (
        f"ambiguous: places at upstream lines {top[0].slot.line()} and {top[1].slot.line()} "
        f"score {top[0].score:.2f} and {top[1].score:.2f}"
    )
    return Decision(block, top[0].slot, top[0].score, True, top, reason)


def _data_flow_side(block: Block, between: Sequence[Stmt], bound: frozenset[str]) -> str | None:
    """``after`` when the block reads a name the new code introduces, ``before`` for the reverse.

    Only names bound for the first time count (``bound`` holds the names bound before the
    new code): rebinding a name that already exists leaves both orders valid Python.
    """
    if not between:
        return None
    reads, writes = block_names(block.code)
    between_reads = frozenset().union(*(s.reads for s in between))
    between_writes = frozenset().union(*(s.writes for s in between)) - bound
    after = bool(reads & between_writes)
    before = bool((writes - bound) & between_reads)
    if after and not before:
        return "after"
    if before and not after:
        return "before"
    return None


def block_names(code: str) -> tuple[frozenset[str], frozenset[str]]:
    """Names a block's code reads and binds (``x``, ``self.x``)."""
    try:
        return names_of(ast.parse(code).body)
    except SyntaxError:
        return frozenset(), frozenset()


# --- scoring --------------------------------------------------------------------------------


def _score_all(index: _Index, block: Block) -> Iterator[Scored]:
    anchor = block.anchor
    spanning = (BlockKind.REPLACEMENT, BlockKind.DELETION, BlockKind.HEADER)
    span = len(anchor.replaced) if block.kind in spanning else 0
    for slot in _candidate_slots(index, anchor, span):
        yield _score(slot, anchor, index.repeated, index.by_key)


def _candidate_slots(index: _Index, anchor: Anchor, span: int) -> Iterator[Slot]:
    """Slots next to any statement resembling the anchor, plus body edges on the path."""
    # The k-th old neighbour may have k vanished statements between it and the block.
    for k, key in enumerate(anchor.before):
        for position, i in _matches(index, key):
            for offset in range(k + 1):
                yield _slot(index, position, i + 1 + offset, span)
    for k, key in enumerate(anchor.after):
        for position, i in _matches(index, key):
            for offset in range(k + 1):
                yield _slot(index, position, i - span - offset, span)
    if anchor.replaced:
        for position, i in _matches(index, split_full_key(anchor.replaced[0])[0]):
            yield _slot(index, position, i, span)
    if anchor.edge is not Edge.NONE or not (anchor.before or anchor.after):
        for position, (path, suite) in enumerate(index.suites):
            if _path_score(anchor.path, path) >= FUZZY:
                if anchor.edge in (Edge.FIRST, Edge.ONLY):
                    yield _slot(index, position, 0, span)
                if anchor.edge in (Edge.LAST, Edge.ONLY):
                    yield _slot(index, position, len(suite.stmts) - span, span)


def _slot(index: _Index, position: int, at: int, span: int) -> Slot:
    path, suite = index.suites[position]
    at = max(0, min(at, len(suite.stmts) - span))
    return Slot(suite, path, at, span)


def _matches(index: _Index, key: str) -> list[tuple[int, int]]:
    """Exact occurrences of a statement, else its close relatives anywhere in the method."""
    exact = index.by_key.get(key)
    if exact:
        return exact
    return [
        where
        for other, places in index.by_key.items()
        if similarity(key, other) >= FUZZY
        for where in places
    ]


def _score(slot: Slot, anchor: Anchor, repeated: frozenset[str], present: Container[str]) -> Scored:
    """Score a place; ``repeated`` are keys the new method has more than once, ``present``
    every key it has (an old neighbour that is gone cannot contradict a place)."""
    stmts = slot.suite.stmts
    path = _path_score(anchor.path, slot.path)
    # "First (last) in its body" is evidence only for the body the anchor names.
    before, after = stmts[: slot.index], stmts[slot.index + slot.span :]
    prev = _side(anchor.before, anchor.after, before[::-1]) * (1.0 if anchor.before else path)
    nxt = _side(anchor.after, anchor.before, after) * (1.0 if anchor.after else path)
    # The nearest old neighbour still present upstream, found only on the wrong side of
    # the place (nested statements count: upstream may have wrapped it), contradicts it.
    ahead = _keys_within((*stmts[slot.index : slot.index + slot.span], *after))
    behind = _keys_within(before)
    if _wrong_side(anchor.before, present, ahead, behind):
        prev *= CONTRADICTED
    if _wrong_side(anchor.after, present, behind, ahead):
        nxt *= CONTRADICTED
    # Both old neighbours right around the place: the block's gap survived intact, only
    # wrapped in (or unwrapped from) a new compound statement.
    if (
        anchor.before
        and anchor.after
        and before
        and after
        and before[-1].key == anchor.before[0]
        and after[0].key == anchor.after[0]
        and (_wrapped(anchor.path, slot.path) or _wrapped(slot.path, anchor.path))
    ):
        path = max(path, PATH_INTACT)
    # A statement the method repeats tells little alone: its neighbour must agree too.
    if _unconfirmed(anchor.before, before[::-1], repeated):
        prev *= CONTRADICTED
    if _unconfirmed(anchor.after, after, repeated):
        nxt *= CONTRADICTED
    if anchor.replaced:
        replaced = _replaced_score(anchor.replaced, stmts[slot.index : slot.index + slot.span])
        score = 0.4 * replaced + 0.3 * path + 0.15 * prev + 0.15 * nxt
    else:
        replaced = 1.0
        score = 0.4 * path + 0.3 * prev + 0.3 * nxt
    return Scored(slot, score, replaced, (replaced, path, prev, nxt))


def _wrong_side(
    anchor_keys: Sequence[str], present: Container[str], wrong: set[str], right: set[str]
) -> bool:
    """The nearest old neighbour still in the method stands only on the wrong side."""
    surviving = [k for k in anchor_keys if k in present][:1]
    return bool(surviving) and surviving[0] in wrong and surviving[0] not in right


_CLAUSE_LABELS = ("else:", "finally:", "except", "case ")


def _wrapped(short: Sequence[str], long: Sequence[str]) -> bool:
    """Whether ``long`` is ``short`` with whole compound statements wrapped around parts
    of it: its extra entries are headers, never a clause label (``else:``), which would
    put the body in another branch."""
    extra: list[str] = []
    position = 0
    for entry in long:
        if position < len(short) and entry == short[position]:
            position += 1
        else:
            extra.append(entry)
    return position == len(short) and not any(e.startswith(_CLAUSE_LABELS) for e in extra)


def _keys_within(stmts: Sequence[Stmt]) -> set[str]:
    """Keys of ``stmts`` and of every statement nested in them."""
    keys: set[str] = set()
    for stmt in stmts:
        keys.add(stmt.key)
        for clause in stmt.clauses:
            keys |= _keys_within(clause.stmts)
    return keys


def _unconfirmed(
    anchor_keys: Sequence[str], neighbours: Sequence[Stmt], repeated: frozenset[str]
) -> bool:
    """The nearest neighbour is the anchor's, but a repeated statement whose own next
    neighbour does not match the anchor's second one (or is there where the anchor saw the
    edge of the body)."""
    if not anchor_keys or not neighbours or neighbours[0].key != anchor_keys[0]:
        return False
    if anchor_keys[0] not in repeated:
        return False
    if len(anchor_keys) < 2:
        return len(neighbours) > 1
    return len(neighbours) < 2 or similarity(neighbours[1].key, anchor_keys[1]) < FUZZY


def _side(
    anchor_keys: Sequence[str], other_side: Sequence[str], neighbours: Sequence[Stmt]
) -> float:
    """How well the nearest statements on one side match the anchor's old neighbours.

    A statement that is exactly an old neighbour from the other side is that statement,
    not an edited version of one on this side, however much it resembles one.
    """
    if not anchor_keys:
        return 1.0 if not neighbours else 0.0
    if not neighbours:
        return 0.0
    nearest = neighbours[0].key
    if nearest in other_side and nearest not in anchor_keys:
        return 0.0
    best = 0.0
    for k, key in enumerate(anchor_keys):
        match = similarity(key, nearest)
        # Below FUZZY it is another statement, however much punctuation they share.
        if match >= FUZZY:
            best = max(best, match * DECAY**k)
    return best


def _replaced_score(replaced: Sequence[str], found: Sequence[Stmt]) -> float:
    """How closely the statements at a slot are the ones the block replaced (1.0: unchanged)."""
    if len(found) != len(replaced):
        return 0.0
    total = 0.0
    for recorded, stmt in zip(replaced, found, strict=True):
        head, digest = split_full_key(recorded)
        # A header edit records the header alone: the bodies below it are spliced anyway.
        if recorded == full_key(stmt) or (not digest and stmt.clauses and recorded == stmt.key):
            total += 1.0
            continue
        # Same header, changed body: the same statement, changed upstream.
        total += min(similarity(head, stmt.key), 0.95)
    return total / len(replaced)


def _path_score(old: Sequence[str], new: Sequence[str]) -> float:
    """Alignment score of two paths of headers in [0, 1] (1.0 only when equal)."""
    if tuple(old) == tuple(new):
        return 1.0
    if not old or not new:
        return 0.0
    rows, cols = len(old), len(new)
    table = [[0.0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        for j in range(1, cols + 1):
            pair = similarity(old[i - 1], new[j - 1])
            pair = pair if pair >= PATH_FUZZY else 0.0
            table[i][j] = max(table[i - 1][j], table[i][j - 1], table[i - 1][j - 1] + pair)
    return min(table[rows][cols] / max(rows, cols), 0.99)


# --- resolutions and overlaps ---------------------------------------------------------------


def _resolution(index: _Index, block: Block) -> Slot | None:
    """The slot a recorded resolution names, if it still exists."""
    resolution = block.anchor.resolution
    if resolution is None:
        return None
    span = len(resolution.replaces)
    for path, suite in index.suites:
        if path != resolution.path:
            continue
        starts = (
            [0]
            if not resolution.after
            else [i + 1 for i, stmt in enumerate(suite.stmts) if stmt.key == resolution.after]
        )
        for start in starts:
            found = tuple(full_key(s) for s in suite.stmts[start : start + span])
            if found == resolution.replaces:
                return Slot(suite, path, start, span)
    return None


def resolution_at(slot: Slot) -> Resolution:
    """The record that puts a block at ``slot`` again on the next sync."""
    stmts = slot.suite.stmts
    after = stmts[slot.index - 1].key if slot.index else ""
    replaces = tuple(full_key(s) for s in stmts[slot.index : slot.index + slot.span])
    return Resolution(after, slot.path, replaces)


def _settle_by_order(decisions: list[Decision]) -> list[Decision]:
    """An ambiguous block takes the best place that keeps the blocks' order, if clear.

    Blocks of one member keep their relative order across an upgrade: a place that would
    put a block before an earlier block (or after a later one) placed in the same body is
    no place for it. Only accepted placements constrain, so nothing is guessed in a chain.
    """
    result = list(decisions)
    for position, decision in enumerate(decisions):
        if not decision.conflict or not decision.reason.startswith("ambiguous"):
            continue
        kept = [c for c in decision.candidates if _keeps_order(c.slot, position, decisions)]
        if len(kept) == len(decision.candidates) or not kept or kept[0].score < ACCEPT:
            continue
        if len(kept) == 1 or _clear_winner(kept[0], kept[1]):
            reason = "the best place that keeps the order of the member's blocks"
            chosen = kept[0]
            result[position] = Decision(
                decision.block, chosen.slot, chosen.score, False, decision.candidates, reason
            )
    return result


def _clear_winner(best: Scored, runner_up: Scored) -> bool:
    return best.score - runner_up.score >= MARGIN or best.dominates(runner_up)


def _keeps_order(slot: Slot, position: int, decisions: Sequence[Decision]) -> bool:
    for other, decision in enumerate(decisions):
        placed = decision.slot
        if other == position or decision.conflict or placed is None:
            continue
        if placed.suite is not slot.suite:
            continue
        if other < position and slot.index < placed.index + placed.span:
            return False
        if other > position and slot.index > placed.index:
            return False
    return True


def _resolve_overlaps(decisions: list[Decision]) -> list[Decision]:
    """Two blocks may not replace the same upstream statements: the weaker becomes a conflict."""
    claimed: dict[tuple[int, int], Decision] = {}
    result = list(decisions)
    order = sorted(range(len(result)), key=lambda i: -result[i].score)
    for i in order:
        decision = result[i]
        if decision.conflict or decision.slot is None or not decision.slot.span:
            continue
        cells = [
            (id(decision.slot.suite), decision.slot.index + k) for k in range(decision.slot.span)
        ]
        owner = next((claimed[c] for c in cells if c in claimed), None)
        if owner is None:
            claimed.update((c, decision) for c in cells)
            continue
        reason = f"the statements it replaced are already replaced by {owner.block.id}"
        result[i] = Decision(
            decision.block, decision.slot, decision.score, True, decision.candidates, reason
        )
    return result
