"""An upstream change is followed whole within a method (docs/design.md rule 5).

Where the output follows a change at one edit (the runners lag: they never had its code;
the engine follows it, or a maintainer dropped the edit: ``Decision.keeps_upstream``, as
for ``followed-across``) and keeps omni's code over statements the same change brought at
another, every edit of that change in the method is a conflict naming it and its hunks
(a maintainer's recorded answer stands). A commit of a clone is one change. A release is
the diff of many commits: its hunks are one change where they are tied
(``History.tied_by``: both use a name the release brought into the method), and then the
tied edits are a conflict naming the release; elsewhere the kept edit stands as decided,
with a note in its reason of what release-level evidence cannot tell (a note, which
decides nothing). A change split across methods, or a release whose removal omni's code
still holds where another edit follows it, is the module rule's (``followed-across``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import Rule
from omni_port.sync.context import Decision, conflict_at
from omni_port.sync.facts import History, MemberFacts
from omni_port.sync.rule import Silent

#: The decisions that follow an upstream change and those that keep omni's code over what
#: it brought, by change.
_Split = dict[str, tuple[list[Decision], list[Decision]]]


class FollowedWhole(Silent):
    name = Rule.FOLLOWED_WHOLE
    reads = (History,)

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        split = _split_changes(facts, decisions)
        if not split:
            return None
        # Each decision of a split change, by its block's id, with that change.
        parts = {
            d.block.id: (change, d in keepers)
            for change, (followers, keepers) in split.items()
            for d in (*followers, *keepers)
        }
        return [_whole(facts, d, split, parts.get(d.block.id, ("", False))) for d in decisions]


def _whole(
    facts: MemberFacts, decision: Decision, split: _Split, part: tuple[str, bool]
) -> Decision:
    """``decision`` as a part of a split change (``part``: the change, and whether the
    decision keeps omni's code over it) leaves it: a conflict naming a commit, or a
    release where its hunks are tied; else with a release the note on a kept edit."""
    change, kept = part
    if not change or decision.block.anchor.resolution is not None:
        return decision  # a maintainer's recorded answer stands; the others name it
    followers, keepers = split[change]
    named = facts.history.named(change)
    if facts.history.is_commit(change):
        hunks = _ids((*followers, *keepers))
        reason = (
            f"upstream change {named} would be followed by half in this method: "
            f"its hunks here are {hunks} (followed as the runners' lag at some, "
            "omni's code kept over the others); follow it whole or keep omni's code"
        )
        return conflict_at(decision, reason)
    ties = _ties(facts, change, followers, keepers)
    if decision.block.id in {d.block.id for f, k, _ in ties for d in (f, k)}:
        return conflict_at(decision, _tied_conflict(named, ties))
    note = (
        f"{named} also brought code another edit here follows ({_ids(followers)}), "
        "and no name it brought into the method ties the two; releases alone cannot tell "
        "whether that is one change (a clone can: --upstream-repo)"
    )
    if not kept or note in decision.reason:
        return decision  # said once: revised again, the member settles
    reason = f"{decision.reason}; {note}" if decision.reason else note
    return replace(decision, reason=reason)


def _ties(
    facts: MemberFacts, change: str, followers: Sequence[Decision], keepers: Sequence[Decision]
) -> list[tuple[Decision, Decision, frozenset[str]]]:
    """The (followed, kept, names) of a split release that are one change: both hunks use
    the names the release brought into the method (``History.tied_by``)."""
    pairs = (
        (f, k, facts.history.tied_by(change, f.block, k.block)) for f in followers for k in keepers
    )
    return [(f, k, names) for f, k, names in pairs if names]


def _tied_conflict(named: str, ties: Sequence[tuple[Decision, Decision, frozenset[str]]]) -> str:
    """A tied release split's conflict: the release, its hunks and the names tying them."""
    followed = list({f.block.id: f for f, _, _ in ties}.values())
    kept = list({k.block.id: k for _, k, _ in ties}.values())
    names = sorted({n for _, _, tied in ties for n in tied})
    return (
        f"{named} would be followed by half in this method: its hunks here {_ids(followed)} "
        f"(followed as the runners' lag) and {_ids(kept)} (omni's code kept) both use "
        f"{', '.join(names)}, which it brought into the method; releases alone cannot tell "
        "its commits apart (a clone can: --upstream-repo): follow it whole or keep omni's code"
    )


def _ids(decisions: Sequence[Decision]) -> str:
    """The blocks' short ids (``edit-01``), as a list in a note."""
    return ", ".join(d.block.id.rsplit(".", 1)[-1] for d in decisions)


def _split_changes(facts: MemberFacts, decisions: Sequence[Decision]) -> _Split:
    """The upstream changes the member's decisions split, each with the decisions that
    follow it (an edit that is the runners' lag behind it) and those that keep omni's code
    as it is (no merge) over statements it brought."""
    followed: dict[str, list[Decision]] = {}
    for decision in decisions:
        found = facts.history.explained(decision.block) if decision.keeps_upstream else None
        if found is not None and found.lag and found.brought_by:
            followed.setdefault(found.brought_by, []).append(decision)
    if not followed:
        return {}  # nothing followed: no kept edit's arrival is worth working out
    split: _Split = {}
    for decision in decisions:
        # A merge took upstream's changes since the edit's own release in: not kept over.
        kept = not (decision.conflict or decision.follow) and decision.code is None
        if not kept or decision.block.anchor.resolution is not None:
            continue
        change = facts.history.arrived_in(decision.block)
        if change in followed:
            split.setdefault(change, (followed[change], []))[1].append(decision)
    return split


RULE = FollowedWhole()
