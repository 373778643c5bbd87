"""Places of a block in the new method, scored against its anchor (the anchor rule's
evidence, which other rules re-anchor with too).

A place (slot) is a position in one body of the new method: before statement ``index``
(``index == len(body)`` is its end), optionally replacing ``span`` statements from there.
Each slot is scored on the block's anchor: the enclosing path, the nearest surviving
upstream neighbours before and after, the replaced statements, and the edge position.
The best slot wins only with a clear margin over the runner-up (``clear_winner``).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from omni_port.model import Anchor, Block, BlockKind, Edge, Resolution, Stmt, Suite
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import full_key, split_full_key, walk

#: Least score of an accepted place.
ACCEPT = 0.65
#: Least score of a place other evidence may take when the anchor alone is unsure (a
#: Location line singles it out, or another kind of evidence seconds it).
WEAK_ACCEPT = 0.5
#: Least lead of the best place over the runner-up.
MARGIN = 0.08
#: Least similarity for two statements to count as the same statement changed.
FUZZY = 0.6
#: Least similarity for two headers on a path to count as the same compound statement.
PATH_FUZZY = 0.75
#: A path this similar to the anchor's names the same body (headers edited, not moved).
PATH_CERTAIN = 0.9
#: Path score of a place with an old neighbour right beside it, in a body upstream
#: wrapped (or unwrapped): the neighbour and the block may have moved in together.
PATH_INTACT = 0.75
#: Weight of the n-th nearest old neighbour when nearer ones vanished upstream.
DECAY = 0.8
#: Total lead, over all kinds of evidence, of a place that is nowhere worse than another.
DOMINANCE = 0.2
#: Weight left to a neighbour match when the nearest old neighbour sits on the other side.
CONTRADICTED = 0.5
#: Most new statements upstream may have put among the replaced ones for a place to hold
#: them all.
AMONG = 2


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

    def held(self) -> tuple[Stmt, ...]:
        """The upstream statements the slot spans (none for an insertion)."""
        return self.suite.stmts[self.index : self.index + self.span]

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
    #: The nearest old neighbour on a side stands only on the other side of the place:
    #: upstream moved statements across it.
    contradicted: bool = False

    def dominates(self, other: Scored) -> bool:
        """At least as good on every kind of evidence, and clearly better on some."""
        pairs = list(zip(self.parts, other.parts, strict=True))
        return all(a >= b for a, b in pairs) and sum(a - b for a, b in pairs) >= DOMINANCE


@dataclass(frozen=True, slots=True)
class Index:
    """Every body of the new method with its path, and every statement's location."""

    suites: tuple[tuple[tuple[str, ...], Suite], ...]
    #: key -> [(suite position in ``suites``, statement index)]
    by_key: dict[str, list[tuple[int, int]]]
    #: Keys the method has more than once.
    repeated: frozenset[str]
    #: Path scores asked of this method, by (old path, new path): every slot of every body
    #: is scored against every block's path, and the same pairs recur.
    paths: dict[tuple[tuple[str, ...], tuple[str, ...]], float] = field(
        default_factory=dict, compare=False, repr=False
    )

    def path_score(self, old: tuple[str, ...], new: tuple[str, ...]) -> float:
        """``path_score(old, new)``, kept for the method."""
        found = self.paths.get((old, new))
        if found is None:
            found = self.paths[(old, new)] = path_score(old, new)
        return found


def index_of(method: Stmt) -> Index:
    suites = tuple((path, suite) for clause in method.clauses[:1] for path, suite in walk(clause))
    by_key: dict[str, list[tuple[int, int]]] = {}
    for position, (_, suite) in enumerate(suites):
        for i, stmt in enumerate(suite.stmts):
            by_key.setdefault(stmt.key, []).append((position, i))
    repeated = frozenset(key for key, places in by_key.items() if len(places) > 1)
    return Index(suites, by_key, repeated)


def old_neighbours(anchor: Anchor) -> set[str]:
    """The keys of the anchor's old neighbours, as statement keys (a neighbour another
    block replaced is recorded with its body's fingerprint)."""
    return {split_full_key(key)[0] for key in (*anchor.before, *anchor.after)}


def distinct(scored: Iterable[Scored]) -> Iterator[Scored]:
    seen: set[tuple[int, int, int]] = set()
    for item in scored:
        if item.slot.key() not in seen:
            seen.add(item.slot.key())
            yield item


def clear_winner(best: Scored, runner_up: Scored) -> bool:
    """Whether ``best`` wins clearly. A place an old neighbour contradicts never wins
    clearly over an acceptable one nothing contradicts: upstream moved statements across
    it, and which side the block went with is the maintainer's call."""
    if best.contradicted and not runner_up.contradicted and runner_up.score >= ACCEPT:
        return False
    return best.score - runner_up.score >= MARGIN or best.dominates(runner_up)


def clear(top: Sequence[Scored]) -> bool:
    """Whether the best of ``top`` wins clearly: alone, or ahead of the runner-up."""
    return len(top) == 1 or clear_winner(top[0], top[1])


def clear_place(index: Index, block: Block, floor: float = ACCEPT) -> Scored | None:
    """The best place of ``block`` in the method of ``index`` when it scores at least
    ``floor`` and wins clearly (None otherwise): the anchor's own test, for evidence that
    re-anchors a block."""
    top = list(distinct(ranked(index, block)))[:2]
    if not top or top[0].score < floor:
        return None
    if len(top) > 1 and not clear_winner(top[0], top[1]):
        return None
    return top[0]


# --- scoring --------------------------------------------------------------------------------


def ranked(index: Index, block: Block) -> list[Scored]:
    """Every place of ``block``, best first; equal scores by line, then span, so the order
    never depends on how the places were found."""
    return sorted(score_all(index, block), key=lambda s: (-s.score, s.slot.line(), s.slot.span))


def score_all(index: Index, block: Block) -> Iterator[Scored]:
    anchor = block.anchor
    spanning = (BlockKind.REPLACEMENT, BlockKind.DELETION, BlockKind.HEADER)
    span = len(anchor.replaced) if block.kind in spanning else 0
    for slot in _candidate_slots(index, anchor, span):
        yield _score(slot, anchor, index)


def _candidate_slots(index: Index, anchor: Anchor, span: int) -> Iterator[Slot]:
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
        yield from _between_neighbours(index, anchor, span)
        yield from _short_at_edge(index, anchor, span)
        yield from _among_neighbours(index, anchor, span)
    if anchor.edge is not Edge.NONE or not (anchor.before or anchor.after):
        for position, (path, suite) in enumerate(index.suites):
            if index.path_score(anchor.path, path) >= FUZZY:
                if anchor.edge in (Edge.FIRST, Edge.ONLY):
                    yield _slot(index, position, 0, span)
                if anchor.edge in (Edge.LAST, Edge.ONLY):
                    yield _slot(index, position, len(suite.stmts) - span, span)


def _between_neighbours(index: Index, anchor: Anchor, span: int) -> Iterator[Slot]:
    """Fewer statements than the block replaced, between both its nearest old neighbours
    still standing in one body: upstream deleted some of the replaced statements."""
    if not (anchor.before and anchor.after):
        return
    afters = index.by_key.get(anchor.after[0], [])
    for position, i in index.by_key.get(anchor.before[0], []):
        for other, j in afters:
            if other == position and 0 < j - i - 1 < span:
                path, suite = index.suites[position]
                yield Slot(suite, path, i + 1, j - i - 1)


def _among_neighbours(index: Index, anchor: Anchor, span: int) -> Iterator[Slot]:
    """More statements than the block replaced (a few), between both its nearest old
    neighbours in one body: upstream put new statements among them."""
    if not (anchor.before and anchor.after):
        return
    afters = index.by_key.get(anchor.after[0], [])
    for position, i in index.by_key.get(anchor.before[0], []):
        for other, j in afters:
            if other == position and span < j - i - 1 <= span + AMONG:
                path, suite = index.suites[position]
                yield Slot(suite, path, i + 1, j - i - 1)


def _short_at_edge(index: Index, anchor: Anchor, span: int) -> Iterator[Slot]:
    """Fewer statements than the block replaced, between its nearest old neighbour and
    the end (or start) of the body it ended (began): upstream deleted some of them."""
    if anchor.edge is Edge.LAST and anchor.before and not anchor.after:
        for position, i in index.by_key.get(anchor.before[0], []):
            path, suite = index.suites[position]
            if 0 < len(suite.stmts) - i - 1 < span:
                yield Slot(suite, path, i + 1, len(suite.stmts) - i - 1)
    if anchor.edge is Edge.FIRST and anchor.after and not anchor.before:
        for position, j in index.by_key.get(anchor.after[0], []):
            path, suite = index.suites[position]
            if 0 < j < span:
                yield Slot(suite, path, 0, j)


def _slot(index: Index, position: int, at: int, span: int) -> Slot:
    path, suite = index.suites[position]
    # A body shorter than the replaced statements holds all it can of them.
    span = min(span, len(suite.stmts))
    at = max(0, min(at, len(suite.stmts) - span))
    return Slot(suite, path, at, span)


def _matches(index: Index, key: str) -> list[tuple[int, int]]:
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


def _score(slot: Slot, anchor: Anchor, index: Index) -> Scored:
    """Score a place in the method of ``index`` (its keys: an old neighbour that is gone
    cannot contradict a place; a key it repeats tells little alone)."""
    repeated, present = index.repeated, index.by_key
    stmts = slot.suite.stmts
    path = index.path_score(anchor.path, slot.path)
    # "First (last) in its body" is evidence only for the body the anchor names.
    before, after = stmts[: slot.index], stmts[slot.index + slot.span :]
    prev = _side(anchor.before, anchor.after, before[::-1]) * (1.0 if anchor.before else path)
    nxt = _side(anchor.after, anchor.before, after) * (1.0 if anchor.after else path)
    # The nearest old neighbour still present upstream, found only on the wrong side of
    # the place (nested statements count: upstream may have wrapped it), contradicts it.
    ahead = (*slot.held(), *after)
    # Both nearest old neighbours still stand in this body, yet neither beside the place:
    # upstream moved statements around the block, and a place found through farther
    # neighbours is a guess at which of them it went with.
    contradicted = not slot.span and _moved_around(anchor, stmts, before, after)
    if _wrong_side(anchor.before, present, ahead, before):
        prev *= CONTRADICTED
        contradicted = True
    if _wrong_side(anchor.after, present, before, ahead):
        nxt *= CONTRADICTED
        contradicted = True
    # An old neighbour right beside the place, in a body upstream wrapped in (or unwrapped
    # from) a new compound statement: the block may have moved with it, only its depth
    # changed. The path then does not count against the place; the other side's evidence
    # still has to agree for it to win.
    beside_before = bool(anchor.before and before and before[-1].key == anchor.before[0])
    beside_after = bool(anchor.after and after and after[0].key == anchor.after[0])
    if (beside_before or beside_after) and (
        wrapped(anchor.path, slot.path) or wrapped(slot.path, anchor.path)
    ):
        path = max(path, PATH_INTACT)
    # A statement the method repeats tells little alone: its neighbour must agree too.
    if _unconfirmed(anchor.before, before[::-1], repeated):
        prev *= CONTRADICTED
    if _unconfirmed(anchor.after, after, repeated):
        nxt *= CONTRADICTED
    if anchor.replaced:
        replaced = replaced_score(anchor.replaced, slot.held())
        score = 0.4 * replaced + 0.3 * path + 0.15 * prev + 0.15 * nxt
    else:
        replaced = 1.0
        score = 0.4 * path + 0.3 * prev + 0.3 * nxt
    return Scored(slot, score, replaced, (replaced, path, prev, nxt), contradicted)


def _wrong_side(
    anchor_keys: Sequence[str],
    present: Container[str],
    wrong: Sequence[Stmt],
    right: Sequence[Stmt],
) -> bool:
    """The nearest old neighbour still in the method stands only on the wrong side; or,
    for a statement the old body repeated, fewer copies of it stand on the right side than
    the anchor saw there, and one stands on the wrong side (a copy moved across)."""
    surviving = [k for k in anchor_keys if k in present][:1]
    if not surviving:
        return False
    key = surviving[0]
    if not _count_within(wrong, key):
        return False
    return _count_within(right, key) < max(anchor_keys.count(key), 1)


def _moved_around(
    anchor: Anchor, stmts: Sequence[Stmt], before: Sequence[Stmt], after: Sequence[Stmt]
) -> bool:
    """Whether the anchor's nearest old neighbours both stand in the body, neither of them
    right beside the place (for an insertion: a replacement is found by what it replaces,
    with new upstream code on both sides as often as not)."""
    if not anchor.before or not anchor.after:
        return False
    near_before = split_full_key(anchor.before[0])[0]
    near_after = split_full_key(anchor.after[0])[0]
    if (before and before[-1].key == near_before) or (after and after[0].key == near_after):
        return False
    keys = {stmt.key for stmt in stmts}
    return near_before in keys and near_after in keys


_CLAUSE_LABELS = ("else:", "finally:", "except", "case ")


def wrapped(short: Sequence[str], long: Sequence[str]) -> bool:
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


def _count_within(stmts: Sequence[Stmt], key: str) -> int:
    """How often ``key`` occurs among ``stmts`` and every statement nested in them."""
    count = 0
    for stmt in stmts:
        count += stmt.key == key
        for clause in stmt.clauses:
            count += _count_within(clause.stmts, key)
    return count


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


def replaced_score(replaced: Sequence[str], found: Sequence[Stmt]) -> float:
    """How closely the statements at a slot are the ones the block replaced (1.0: unchanged).

    Fewer statements are the replaced ones less those upstream deleted: each must be one
    of them, in order, and every deleted one counts as a change."""
    if len(found) < len(replaced):
        return _fewer_score(replaced, found)
    if len(found) > len(replaced):
        return _more_score(replaced, found)
    total = sum(
        _same_statement(recorded, stmt) for recorded, stmt in zip(replaced, found, strict=True)
    )
    return total / len(replaced)


def edited_in_place(replaced: Sequence[str], found: Sequence[Stmt]) -> bool:
    """Whether ``found`` are the replaced statements, each edited no further than the
    anchor still calls it the same statement, less any that upstream deleted."""
    if not found or len(found) > len(replaced):
        return False
    if len(found) < len(replaced):
        return _fewer_score(replaced, found) > 0.0
    pairs = zip(replaced, found, strict=True)
    return all(_same_statement(recorded, stmt) >= FUZZY for recorded, stmt in pairs)


def _same_statement(recorded: str, stmt: Stmt) -> float:
    """How much ``stmt`` is the statement recorded as ``recorded`` (its full key)."""
    head, digest = split_full_key(recorded)
    # A header edit records the header alone: the bodies below it are spliced anyway.
    if recorded == full_key(stmt) or (not digest and stmt.clauses and recorded == stmt.key):
        return 1.0
    # Same header, changed body: the same statement, changed upstream.
    return min(similarity(head, stmt.key), 0.95)


def _fewer_score(replaced: Sequence[str], found: Sequence[Stmt]) -> float:
    """The best in-order pairing of every found statement with a replaced one (each pair
    alike at least ``FUZZY``), as a share of the replaced statements; 0.0 without one."""
    if not found:
        return 0.0
    # best[j]: the best total pairing found[:j] with the replaced statements seen so far.
    best: list[float | None] = [0.0] + [None] * len(found)
    for recorded in replaced:
        for j in range(len(found), 0, -1):
            previous = best[j - 1]
            if previous is None:
                continue
            alike = _same_statement(recorded, found[j - 1])
            current = best[j]
            if alike >= FUZZY and (current is None or previous + alike > current):
                best[j] = previous + alike
    total = best[len(found)]
    return total / len(replaced) if total is not None else 0.0


def _more_score(replaced: Sequence[str], found: Sequence[Stmt]) -> float:
    """The best in-order pairing of every replaced statement with a found one (alike at
    least ``FUZZY``), as a share of the found statements (each new one counts as a change);
    0.0 when one of the replaced has no partner, or the first or last found is new."""
    pairs = _inner_pairs(replaced, found)
    if pairs is None:
        return 0.0
    return sum(_same_statement(replaced[i], found[j]) for i, j in pairs) / len(found)


def new_among(replaced: Sequence[str], found: Sequence[Stmt]) -> tuple[Stmt, ...]:
    """The statements of ``found`` upstream put among the replaced ones, when the others
    are the replaced statements, edited no further than the anchor still calls them the
    same, in order, the first and the last among them (none otherwise)."""
    pairs = _inner_pairs(replaced, found) if len(found) > len(replaced) else None
    if not pairs:
        return ()
    paired = {j for _, j in pairs}
    return tuple(stmt for j, stmt in enumerate(found) if j not in paired)


def _inner_pairs(replaced: Sequence[str], found: Sequence[Stmt]) -> list[tuple[int, int]] | None:
    """``among``'s pairs when they hold the first and the last found statement (new ones at
    an end are beside the replaced ones, not among them); None otherwise."""
    pairs = among(replaced, found)
    if not pairs or pairs[0][1] != 0 or pairs[-1][1] != len(found) - 1:
        return None
    return pairs


def among(replaced: Sequence[str], found: Sequence[Stmt]) -> list[tuple[int, int]] | None:
    """The in-order pairs (replaced index, found index) that pair every replaced statement
    with one of ``found`` alike at least ``FUZZY``, the most alike first; None when there
    are none. The found statements left unpaired are the ones upstream put among them."""
    # best[i][j]: the best total pairing replaced[:i] into found[:j], with its pairs.
    rows, cols = len(replaced), len(found)
    best: list[list[tuple[float, tuple[tuple[int, int], ...]] | None]] = [
        [None] * (cols + 1) for _ in range(rows + 1)
    ]
    for j in range(cols + 1):
        best[0][j] = (0.0, ())
    for i in range(1, rows + 1):
        for j in range(i, cols + 1):
            skip = best[i][j - 1]
            kept = best[i - 1][j - 1]
            alike = _same_statement(replaced[i - 1], found[j - 1])
            take = None
            if kept is not None and alike >= FUZZY:
                take = (kept[0] + alike, (*kept[1], (i - 1, j - 1)))
            options = [o for o in (skip, take) if o is not None]
            best[i][j] = max(options, key=lambda o: o[0]) if options else None
    found_best = best[rows][cols]
    return list(found_best[1]) if found_best is not None else None


def beside(anchor: Anchor, slot: Slot, trimmed: Slot) -> Anchor:
    """``anchor`` with the statements ``trimmed`` leaves of ``slot`` as old neighbours."""
    stmts = slot.suite.stmts
    leading = stmts[slot.index : trimmed.index][::-1]
    trailing = stmts[trimmed.index + trimmed.span : slot.index + slot.span]
    before = (*(s.key for s in leading), *anchor.before)[: len(anchor.before) or 1]
    after = (*(s.key for s in trailing), *anchor.after)[: len(anchor.after) or 1]
    return replace(anchor, before=before, after=after)


def path_score(old: Sequence[str], new: Sequence[str]) -> float:
    """Alignment score of two paths of headers in [0, 1] (1.0 only when equal)."""
    old, new = tuple(old), tuple(new)
    if old == new:
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


# --- resolutions ------------------------------------------------------------------------------


def resolved_slot(index: Index, block: Block) -> Slot | None:
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


def lies_in(mine: Slot, slot: Slot, replaces: bool) -> bool:
    """Whether the place ``mine`` lies in the statements ``slot`` spans (at its edges is
    beside them, not in them); ``replaces``: a place of statements ``mine`` replaces, which
    lies in them when the two overlap (else it is a point before its statement)."""
    if mine.suite is slot.suite:
        if replaces:
            return mine.index < slot.index + slot.span and slot.index < mine.index + mine.span
        return slot.index < mine.index < slot.index + slot.span
    return any(
        inner is mine.suite
        for stmt in slot.held()
        for clause in stmt.clauses
        for _, inner in walk(clause)
    )


def resolution_at(slot: Slot) -> Resolution:
    """The record that puts a block at ``slot`` again on the next sync."""
    stmts = slot.suite.stmts
    after = stmts[slot.index - 1].key if slot.index else ""
    replaces = tuple(full_key(s) for s in slot.held())
    return Resolution(after, slot.path, replaces)
