"""Scoring one step of the replay: where each block of release N went, against release M.

Blocks of N that M still has are matched by code; each is correct (same body and an
upstream neighbour in common with the maintainers' place), flagged (a conflict; the right
place among its candidates or not), followed (upstream history called it upstream code,
yet the maintainers kept it), wrong (placed elsewhere without a word) or missing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from bench.history import Position, match, normalize_code
from omni_port.model import Block, BlockKind, PatchSet, Placement, Rule, Status, Suite, Tree

OUTCOMES = ("correct", "flagged", "followed", "wrong", "missing")


@dataclass(slots=True)
class Tally:
    """Outcomes of one tool on one step."""

    counts: Counter[str] = field(default_factory=Counter)
    #: Flagged blocks whose right place is among their candidates.
    flagged_with_candidate: int = 0
    #: (block, outcome, detail) for the report.
    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, block: str, outcome: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        self.rows.append((block, outcome, detail))

    def common(self) -> int:
        return sum(self.counts[o] for o in OUTCOMES)


def ours(patches: PatchSet, marked: bool) -> list[tuple[Block, Position]]:
    found = []
    for module in patches.modules:
        for piece in module.pieces:
            if isinstance(piece, Block) and piece.marked == marked and piece.code.strip():
                position = Position(
                    module.name,
                    piece.owner,
                    piece.member,
                    piece.anchor.path,
                    "",
                    "",
                    normalize_code(piece.code),
                )
                found.append((piece, position))
    return found


def score(
    patches: PatchSet,
    placements: tuple[Placement, ...],
    truth: list[Position],
    got: list[Position],
    upstream: Tree,
    marked: bool = True,
    output: dict[str, list[str]] | None = None,
) -> Tally:
    tally = Tally()
    ours_ = ours(patches, marked)
    status = {p.block_id: p for p in placements}
    to_truth = match([p for _, p in ours_], truth)
    # A merged block reads as the sync wrote it, not as release N had it.
    placed = [_as_placed(position, status.get(block.id), output) for block, position in ours_]
    to_got = match(placed, got, threshold=0.999)
    to_got.update(_merged_matches(placed, got, to_got))
    for index, (block, _) in enumerate(ours_):
        if index not in to_truth:
            continue
        expected = truth[to_truth[index]]
        placement = status.get(block.id)
        if placement is not None and placement.status is Status.CONFLICT:
            tally.add(block.id, "flagged", placement.reason)
            if _right_candidate(placement, expected, upstream):
                tally.flagged_with_candidate += 1
            continue
        if placement is not None and placement.status is Status.FOLLOWED:
            # Upstream history called it upstream code (a lag or drift) and the sync
            # followed the new upstream, said so; the maintainers kept it.
            tally.add(block.id, "followed", placement.reason)
            continue
        converged = placement is not None and _converged(placement, expected, upstream)
        if index not in to_got and converged:
            # Upstream's own code there is the block's now: nothing of omni's to find.
            tally.add(block.id, "correct")
            continue
        if index not in to_got:
            tally.add(block.id, "missing")
            continue
        actual = got[to_got[index]]
        if actual.same_place(expected):
            tally.add(block.id, "correct")
        else:
            tally.add(block.id, "wrong", _difference(actual, expected))
    return tally


def _as_placed(
    position: Position, placement: Placement | None, output: dict[str, list[str]] | None
) -> Position:
    """``position`` with the code the sync wrote for it (a merge changes the code)."""
    if placement is None or output is None or not placement.start or not placement.decided_by:
        return position
    lines = output.get(placement.module, [])[placement.start - 1 : placement.end]
    return replace(position, code=normalize_code("\n".join(lines)))


def _merged_matches(
    placed: list[Position], got: list[Position], taken: dict[int, int]
) -> dict[int, int]:
    """Merged blocks hold upstream code too: the generated edit inside the merged text
    (extracting the output against M's base sees only omni's part of it) is theirs."""
    used = set(taken.values())
    found: dict[int, int] = {}
    for index, ours in enumerate(placed):
        if index in taken or not ours.code:
            continue
        for other, theirs in enumerate(got):
            same = (ours.module, ours.owner, ours.member) == (
                theirs.module,
                theirs.owner,
                theirs.member,
            )
            if same and other not in used and theirs.code and theirs.code in ours.code:
                found[index] = other
                used.add(other)
                break
    return found


def _converged(placement: Placement, expected: Position, upstream: Tree) -> bool:
    """A convergent block whose place (its slot, or the signature) is the maintainers'."""
    if Rule.CONVERGENT not in placement.decided_by:
        return False
    if placement.kind is BlockKind.SIGNATURE:
        return (placement.owner, placement.member) == (expected.owner, expected.member)
    chosen = replace(placement, candidates=placement.candidates[:1])
    return _right_candidate(chosen, expected, upstream)


def _right_candidate(placement: Placement, expected: Position, upstream: Tree) -> bool:
    """Whether a candidate is the maintainers' place: same body and the same upstream
    statement on one side. A candidate names the statement at its line (the first one a
    replacement replaces), so the statement before it comes from the upstream tree."""
    for candidate in placement.candidates:
        if candidate.path != expected.path:
            continue
        before = _statement_before(upstream.body, candidate.line)
        if candidate.text == expected.after or (before is not None and before == expected.before):
            return True
    return False


def _statement_before(suite: Suite, line: int) -> str | None:
    """Key of the statement just before the one starting at ``line`` ("" when it is first
    in its body); None when no statement starts there."""
    for index, stmt in enumerate(suite.stmts):
        if stmt.start == line:
            return suite.stmts[index - 1].key if index else ""
        if stmt.start < line <= stmt.full_end:
            for clause in stmt.clauses:
                found = _statement_before(clause, line)
                if found is not None:
                    return found
    return None


def _difference(actual: Position, expected: Position) -> str:
    parts = []
    if actual.member != expected.member:
        parts.append(f"member {actual.member} vs {expected.member}")
    if actual.path != expected.path:
        parts.append(f"path {actual.path[-1:]} vs {expected.path[-1:]}")
    if actual.before != expected.before:
        parts.append(f"after `{actual.before[:50]}` vs `{expected.before[:50]}`")
    if actual.after != expected.after:
        parts.append(f"before `{actual.after[:50]}` vs `{expected.after[:50]}`")
    return "; ".join(parts)
