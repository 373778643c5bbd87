"""Upstream changes are atomic (docs/design.md rule 5): two steps of the engine on the decisions of
one copied member, after the rules settled them.

- ``followed_whole``: where the engine follows an upstream commit at one edit (the runners
  lag behind it) and keeps omni's code over statements the same commit brought at
  another, every edit of that commit in the method is a conflict naming it; with releases
  alone (a release is the diff of many commits) the kept edit's reason says so.
- ``run_once``: no call statement runs more often than in both the new upstream and the
  old runner: a placed block that would add a copy is a conflict naming the call and the
  block that took the old copy away.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from omni_port.model import BlockKind
from omni_port.report import shorten
from omni_port.sync.context import Decision, conflict, followed
from omni_port.sync.evidence.code import binds_locals
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.facts import MemberFacts, Stmt


def followed_whole(facts: MemberFacts, decisions: list[Decision]) -> list[Decision]:
    """An upstream change is followed whole within a method (docs/design.md rule 5). Where the
    engine follows a commit of a clone at one edit (the runners lag: they never had it)
    and keeps omni's code over statements the same commit brought at another, every edit
    of that commit here is a conflict naming it and its hunks. A release is the diff of
    many commits: there the kept edit is left as decided, and its reason says what
    release-level evidence cannot tell."""
    split = _split_changes(facts, decisions)
    # Each decision of a split change, by its block's id, with that change.
    parts = {
        d.block.id: (change, d in keepers)
        for change, (followers, keepers) in split.items()
        for d in (*followers, *keepers)
    }
    found: list[Decision] = []
    for decision in decisions:
        change, kept = parts.get(decision.block.id, ("", False))
        if change:
            followers, keepers = split[change]
            named = facts.named(change)
            if facts.is_commit(change):
                hunks = _ids((*followers, *keepers))
                reason = (
                    f"upstream change {named} would be followed by half in this method: "
                    f"its hunks here are {hunks} (followed as the runners' lag at some, "
                    "omni's code kept over the others); follow it whole or keep omni's code"
                )
                decision = _conflict(decision, reason)
            elif kept:
                note = (
                    f"{named} also brought code another edit here follows ({_ids(followers)}); "
                    "releases alone cannot tell whether that is one change (a clone can: "
                    "--upstream-repo)"
                )
                reason = f"{decision.reason}; {note}" if decision.reason else note
                decision = replace(decision, reason=reason)
        found.append(decision)
    return found


def _ids(decisions: Sequence[Decision]) -> str:
    """The blocks' short ids (``edit-01``), as a list in a note."""
    return ", ".join(d.block.id.rsplit(".", 1)[-1] for d in decisions)


def _split_changes(
    facts: MemberFacts, decisions: Sequence[Decision]
) -> dict[str, tuple[list[Decision], list[Decision]]]:
    """The upstream changes the member's decisions split, each with the decisions that
    follow it (an edit that is the runners' lag behind it) and those that keep omni's code
    as it is (no merge) over statements it brought."""
    followed: dict[str, list[Decision]] = {}
    for decision in decisions:
        found = facts.of(decision.block).explained if decision.follow else None
        if found is not None and found.lag and found.brought_by:
            followed.setdefault(found.brought_by, []).append(decision)
    if not followed:
        return {}  # nothing followed: no kept edit's arrival is worth working out
    split: dict[str, tuple[list[Decision], list[Decision]]] = {}
    for decision in decisions:
        # A merge took upstream's changes since the edit's own release in: not kept over.
        kept = not (decision.conflict or decision.follow) and decision.code is None
        if not kept or decision.block.anchor.resolution is not None:
            continue
        change = facts.of(decision.block).arrived_in
        if change in followed:
            split.setdefault(change, (followed[change], []))[1].append(decision)
    return split


def _conflict(decision: Decision, reason: str) -> Decision:
    """``decision`` as a conflict at its place, with its candidates and ``reason``."""
    best = decision.candidates[0] if decision.candidates else None
    found = conflict(decision.block, best, decision.candidates, reason)
    return replace(found, slot=decision.slot, score=decision.score, rules=decision.rules)


def run_once(facts: MemberFacts, decisions: list[Decision]) -> list[Decision]:
    """No call statement runs more often than in both the new upstream and the old runner
    (docs/design.md rule 5): a placed block that adds one more copy of a call, where one side
    moved it and the other kept it (or where the block that took the old copy away is a
    conflict), is a conflict itself. A maintainer's recorded place stands (verify's
    OP512 is the net there)."""
    extra = repeated(facts, decisions)
    if not extra:
        return decisions
    found: list[Decision] = []
    for decision in decisions:
        added = _added_calls(facts, decision)
        twice = [k for k in extra if added[k]]
        if twice and decision.block.anchor.resolution is None:
            key = twice[0]
            remover = _remover(facts, decisions, key)
            shifted = _shifted(facts, decision, remover, key) if remover is not None else None
            decision = shifted or _twice(facts, decision, extra[key], _removed(remover))
        found.append(decision)
    return found


@dataclass(frozen=True, slots=True)
class Twice:
    """A call statement (``ast`` dump) and how often the output, the new upstream and the
    old runner run it."""

    key: str
    output: int
    upstream: int
    #: None when the old runner's counts are unknown (upstream history does not give the
    #: base's code of every block of the member).
    runner: int | None

    def said(self, facts: MemberFacts, text: str) -> str:
        """``"`self.f()` would run 2 times in the method, more often than in the new
        upstream (1) and in the old runner (1)"``, the call as ``text`` (some code that
        holds it) writes it."""
        code = shorten(facts.call_code(text, self.key))
        upstream = f"new upstream ({self.upstream})"
        than = (
            f"{upstream}, the old runner's count unknown (the base's code is not all known)"
            if self.runner is None
            else f"{upstream} and in the old runner ({self.runner})"
        )
        return (
            f"`{code}` would run {self.output} times in the method, more often than in the {than}"
        )


def repeated(facts: MemberFacts, decisions: Sequence[Decision]) -> dict[str, Twice]:
    """The call statements the member the decisions make runs more often than both the new
    upstream and the old runner (twice at least), by key (none without the old runner's
    counts): what verify reports as OP512."""
    old = facts.runner_calls([d.block for d in decisions])
    if old is None:
        return {}
    new = facts.upstream_calls
    out = _output_calls(facts, decisions)
    return {
        k: Twice(k, n, new[k], old[k]) for k, n in out.items() if n >= 2 and n > max(old[k], new[k])
    }


def added_repeats(
    facts: MemberFacts, now: Sequence[Decision], tried: Sequence[Decision]
) -> list[Twice]:
    """The call statements the member ``tried`` makes runs more often than the one ``now``
    makes, and more often than both the new upstream and the old runner (twice at least):
    what verify would newly report (OP512). Without the old runner's counts, more often
    than the new upstream: verify reads the old runner, which may not run it as often."""
    if facts.runner_calls([d.block for d in tried]) is not None:
        before = repeated(facts, now)
        return [
            twice
            for key, twice in repeated(facts, tried).items()
            if key not in before or twice.output > before[key].output
        ]
    new, was = facts.upstream_calls, _output_calls(facts, now)
    return [
        Twice(key, n, new[key], None)
        for key, n in _output_calls(facts, tried).items()
        if n >= 2 and n > max(new[key], was[key])
    ]


def _remover(facts: MemberFacts, decisions: Sequence[Decision], key: str) -> Decision | None:
    """The block whose removal of the old runner's copy of the call ``key`` is not in the
    output: it is a conflict, or follows upstream (the call kept at both places); None
    when no block removed one."""
    for decision in decisions:
        if not decision.conflict and not decision.follow:
            continue
        replaced = facts.of(decision.block).replaced_text
        if replaced is None or facts.calls(replaced)[key] <= facts.calls(decision.block.code)[key]:
            continue
        return decision
    return None


def _removed(remover: Decision | None) -> str:
    """Why the old runner's removal of a copy is not in the output ("" without one)."""
    if remover is None:
        return ""
    fate = "is a conflict" if remover.conflict else "follows upstream there"
    return f"{remover.block.id}, which took the old copy away in the runner, {fate}"


def _shifted(
    facts: MemberFacts, decision: Decision, remover: Decision, key: str
) -> Decision | None:
    """``decision``, an edit that only inserts a copy of the call ``key``, followed as
    upstream's own copy a few statements off; None when it is not that.

    ``remover`` took the runner's old copy away and follows upstream, whose copy stands at
    its place, after statements the runners lacked there (upstream code they never had).
    Between the inserted copy and upstream's stand only those and bindings of plain locals
    the runners had too, which call nothing and which the call does not read: the runner's
    copy is upstream's call written where the runners lacked what upstream put before it.
    One copy runs, upstream's (docs/design.md rule 5: a call upstream moved is moved, not
    duplicated); the block keeps nothing of omni's."""
    block, mine, theirs = decision.block, decision.slot, remover.slot
    if block.marked or block.kind is not BlockKind.INSERTION or remover.lag is None:
        return None  # the remover follows upstream as the runners' lag, or this is no shift
    flow = facts.flow_of(block.code)
    if mine is None or theirs is None or mine.suite is not theirs.suite or flow is None:
        return None
    if len(facts.parsed(block.code) or []) != 1 or facts.calls(block.code)[key] != 1:
        return None
    stmts = mine.suite.stmts
    held = range(theirs.index, theirs.index + theirs.span)
    copy = next((i for i in held if facts.calls(facts.source([stmts[i]]))[key]), None)
    if copy is None:
        return None
    span = range(mine.index, copy) if mine.index <= copy else range(copy + 1, mine.index)
    between = [stmts[i] for i in span]
    lacked = [stmts[i] for i in span if i in held]
    bound = [stmts[i] for i in span if i not in held]
    if not lacked or not all(_local_binding(facts, s, flow.reads) for s in bound):
        return None
    code = shorten(facts.call_code(block.code, key))
    names = ", ".join(f"`{n}`" for s in bound for n in _targets(facts, s))
    brought = f", which {facts.named(remover.lag.changed_by)} brought"
    reason = (
        f"omni's `{code}` is upstream's own copy, {len(between)} statements off: "
        f"{remover.block.id} follows upstream where it took the runner's copy away, and "
        f"upstream's copy stands there, beside `{shorten(lacked[-1].key, 60)}`{brought} (the "
        "runners never had it there)"
    )
    if names:
        reason += f"; between the two, the runners only bind {names}, which the call does not read"
    here = Scored(Slot(mine.suite, mine.path, mine.index, 0), decision.score, 1.0)
    found = followed(block, here, decision.candidates, f"{reason}; one copy runs, upstream's")
    return replace(found, release=remover.release, lag=remover.lag, rules=remover.rules)


def _targets(facts: MemberFacts, stmt: Stmt) -> list[str]:
    """The names an assignment binds, in order (its comprehensions' own names aside)."""
    nodes = facts.parsed(facts.source([stmt])) or []
    found = [t for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign) for t in _assigned(n)]
    return [n.id for t in found for n in ast.walk(t) if isinstance(n, ast.Name)]


def _assigned(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _local_binding(facts: MemberFacts, stmt: Stmt, reads: frozenset[str]) -> bool:
    """Whether ``stmt`` only binds plain locals none of ``reads`` names, calling nothing."""
    return binds_locals(stmt) and not stmt.writes & reads and not facts.makes_calls([stmt])


def _added_calls(facts: MemberFacts, decision: Decision) -> Counter[str]:
    """The call statements a placed block puts into the output (none for a conflict, an
    edit that follows upstream, a compound header, or a plain deletion)."""
    block = decision.block
    if decision.conflict or decision.follow or block.kind is BlockKind.HEADER:
        return Counter()
    if block.kind is BlockKind.DELETION and decision.code is None:
        return Counter()
    return facts.calls(decision.code if decision.code is not None else block.code)


def _output_calls(facts: MemberFacts, decisions: Sequence[Decision]) -> Counter[str]:
    """The call statements of the member the decisions make: the new upstream's, less the
    statements placed blocks replace, plus the blocks' own."""
    counts = facts.upstream_calls.copy()
    for decision in decisions:
        placed = not decision.conflict and not decision.follow
        held = decision.slot.held() if decision.slot is not None else ()
        if placed and held and decision.block.kind is not BlockKind.HEADER:
            counts -= facts.calls(facts.source(held))
        counts += _added_calls(facts, decision)
    return counts


def _twice(facts: MemberFacts, decision: Decision, counts: Twice, remover: str) -> Decision:
    """``decision`` as a conflict: at its place, a call would run more often than in the
    new upstream and the old runner; the reason names the upstream change that made the
    counts differ, or the conflict that leaves upstream's copy in."""
    by = facts.calls_changed_by(counts.key)
    if remover:
        why = remover
    elif by:
        why = f"upstream moved or added it in {by}"
    else:
        why = "upstream keeps its own copy elsewhere"
    said = counts.said(facts, decision.code or decision.block.code)
    return _conflict(decision, f"{said}: {why}; keep one copy")
