"""An upstream change is followed whole across the copied methods of a module
(docs/design.md rule 5: the unit is the change, not the change within one method).

Where the engine follows a change at one edit (the runners lag behind it: they never had
its code) and keeps omni's code at another, in any copied method of the module's runner
classes, over what the same change did there, every one of those edits is a conflict that
names the change and lists each method and hunk. Omni's code stands against a change
where it replaces statements the change brought, or still holds upstream code the change
took out (``History.stood_against``).

A release is the diff of many commits: only code omni still holds that the release took
out ties a kept edit to it, and only a followed lag of runner code the release changed or
took out (both halves are then the runners' old code that release replaced); that a
release brought what omni's code replaces, or code where the runners had none, proves no
single change (the member rule ``followed-whole`` notes the first within a method).

Such a release split is a conflict (docs/design.md rules 5 and 7) where a kept edit's text
was copied after the release (``History.post_dates``: its code holds upstream text a later
release brought, beside code this one took out): the copy there saw the change and kept
the old code while the followed place lags behind it, a half only a clone can clear (the
next real upgrade's EPLB timers: 0.21.0rc1 unwrapped both, the runners' ``sample_tokens``
keeps the wrapper around 0.23.0rc1's ``forward_end(...)``; the clone names 28d7ed0a0e).
Elsewhere it is a note on each of its edits: a copy no newer than the release lags behind
all of it, and on the replayed upgrades every such split that a conflict would show is one
the maintainers' own port made (0.28.0 to 0.30.0: 3 edits placed as they wrote them, 4
lags followed), so with releases alone the evidence does not outweigh theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import Rule
from omni_port.sync.context import Decision, conflict_at
from omni_port.sync.facts import History, MemberFacts
from omni_port.sync.rule import Silent

#: By change: the decisions that follow it and those that keep omni's code against it.
_Split = dict[str, tuple[list[Decision], list[Decision]]]


class FollowedAcross(Silent):
    name = Rule.FOLLOWED_ACROSS
    reads = (History,)

    def revise_module(
        self, facts: Sequence[MemberFacts], decisions: Sequence[Decision]
    ) -> list[Decision] | None:
        split = _split_changes(facts, decisions)
        if not split:
            return None
        # The first commit (in sorted order) a decision takes part in names its conflict;
        # every release it takes part in adds its note.
        conflicts: dict[str, str] = {}
        notes: dict[str, list[str]] = {}
        for change in sorted(split):
            followers, keepers = split[change]
            history = _history(facts, decisions, followers[0])
            if history.is_commit(change):
                reason = _conflict(history, change, split[change])
            else:
                seen = _seen(facts, decisions, change, keepers)
                reason = _seen_conflict(history, change, split[change], seen) if seen else ""
            for d in (*followers, *keepers):
                if reason and d.block.anchor.resolution is not None:
                    continue  # the maintainer's recorded answer stands; the others name it
                if reason:
                    conflicts.setdefault(d.block.id, reason)
                else:
                    notes.setdefault(d.block.id, []).append(_note(history, change, split[change]))
        return [_revised(d, conflicts, notes) for d in decisions]


def _revised(
    decision: Decision, conflicts: dict[str, str], notes: dict[str, list[str]]
) -> Decision:
    """``decision`` as a part of split changes: a conflict naming a commit, or with the
    notes of releases it lacks (said once: revised again, the module settles)."""
    ident = decision.block.id
    if ident in conflicts:
        return conflict_at(decision, conflicts[ident])
    new = [n for n in notes.get(ident, ()) if n not in decision.reason]
    if not new:
        return decision
    reason = "; ".join(filter(None, (decision.reason, *new)))
    return replace(decision, reason=reason)


def _history(facts: Sequence[MemberFacts], decisions: Sequence[Decision], of: Decision) -> History:
    """The upstream history of the member of decision ``of``."""
    return next(f.history for f, d in zip(facts, decisions, strict=True) if d is of)


def _conflict(history: History, change: str, split: tuple[list[Decision], list[Decision]]) -> str:
    """A split commit's conflict: where it is followed and where omni's code is kept."""
    followers, keepers = split
    return (
        f"upstream change {history.named(change)} would be followed by half: it is followed "
        f"at {_hunks(followers)} (the runners' lag behind it) and omni's code is kept "
        f"against it at {_hunks(keepers)}; follow it whole or keep omni's code at each"
    )


def _seen(
    facts: Sequence[MemberFacts],
    decisions: Sequence[Decision],
    change: str,
    keepers: list[Decision],
) -> dict[str, str]:
    """The kept edits whose text was copied after the release ``change`` (``post_dates``),
    by block id, each with the newest release that brought text it holds."""
    seen = {}
    for keeper in keepers:
        later = _history(facts, decisions, keeper).post_dates(keeper.block, change)
        if later:
            seen[keeper.block.id] = later
    return seen


def _seen_conflict(
    history: History,
    change: str,
    split: tuple[list[Decision], list[Decision]],
    seen: dict[str, str],
) -> str:
    """A split release's conflict: omni's code is kept against it where the runners' text
    was copied after it (``seen``), while another edit follows it as their lag."""
    followers, keepers = split
    dated = ", ".join(
        f"{ident.split('.', 1)[-1]} holds code {history.named(later)} brought"
        for ident, later in seen.items()
    )
    return (
        f"{history.named(change)} would be followed by half: it took out code the runners "
        f"hold at {_hunks(followers)} (followed: the runners' lag behind it) and at "
        f"{_hunks(keepers)} (omni's code kept), where the runners' text was copied after "
        f"it ({dated}); releases alone cannot tell whether that is one change (a clone "
        "can: --upstream-repo): follow it whole or keep omni's code at each"
    )


def _note(history: History, change: str, split: tuple[list[Decision], list[Decision]]) -> str:
    """A split release's note (a release is many commits: what it cannot tell)."""
    followers, keepers = split
    return (
        f"{history.named(change)} took out code the runners hold at {_hunks(followers)} "
        f"(followed) and at {_hunks(keepers)} (omni's code kept); releases alone cannot "
        "tell whether that is one change (a clone can: --upstream-repo)"
    )


def _hunks(decisions: Sequence[Decision]) -> str:
    """The blocks as ``Class.method.edit-01``, a list in a note."""
    return ", ".join(d.block.id.split(".", 1)[-1] for d in decisions)


def _split_changes(facts: Sequence[MemberFacts], decisions: Sequence[Decision]) -> _Split:
    """The upstream changes the module's decisions split: each with the decisions that
    follow it (an edit that is the runners' lag behind it) and those that keep omni's code
    as it is (no merge, no recorded resolution) against it."""
    followed: dict[str, list[Decision]] = {}
    for fact, decision in zip(facts, decisions, strict=True):
        found = fact.history.explained(decision.block) if decision.keeps_upstream else None
        if found is None or not found.lag or not found.brought_by:
            continue
        # A release ties only a lag whose code the release changed or took out, as it
        # ties a kept edit (``_against``): upstream code it brought where the runners had
        # none may be any of its commits.
        if fact.history.is_commit(found.brought_by) or decision.block.code.strip():
            followed.setdefault(found.brought_by, []).append(decision)
    if not followed:
        return {}  # nothing followed: no kept edit's changes are worth working out
    split: _Split = {}
    for fact, decision in zip(facts, decisions, strict=True):
        kept = not (decision.conflict or decision.follow) and decision.code is None
        if not kept or decision.block.anchor.resolution is not None:
            continue
        for change in _against(fact.history, decision):
            if change in followed:
                split.setdefault(change, (followed[change], []))[1].append(decision)
    return split


def _against(history: History, decision: Decision) -> tuple[str, ...]:
    """The changes a kept decision's code stands against that tie it to one change: a
    commit by what it brought or took out; a release only by upstream code omni's code
    still holds that the release took out."""
    stood = history.stood_against(decision.block)
    commits = tuple(c for c in stood.brought if history.is_commit(c))
    return tuple(dict.fromkeys((*stood.took_out, *commits)))


RULE = FollowedAcross()
