"""How often the member a set of decisions makes runs each call statement, beside the new
upstream and the old runner (docs/design.md rule 5: no call runs more often than in both).

The run-once rule reads it to refuse a block that adds a copy; the offers step, to withhold
a candidate that would; verify reports the same counts as OP512.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from omni_port.model import BlockKind
from omni_port.sync.context import Decision
from omni_port.sync.evidence.code import shorten
from omni_port.sync.facts import Calls, History


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

    def said(self, calls: Calls, text: str) -> str:
        """``"`self.f()` would run 2 times in the method, more often than in the new
        upstream (1) and in the old runner (1)"``, the call as ``text`` (some code that
        holds it) writes it."""
        code = shorten(calls.call_code(text, self.key))
        upstream = f"new upstream ({self.upstream})"
        than = (
            f"{upstream}, the old runner's count unknown (the base's code is not all known)"
            if self.runner is None
            else f"{upstream} and in the old runner ({self.runner})"
        )
        return (
            f"`{code}` would run {self.output} times in the method, more often than in the {than}"
        )


def repeated(calls: Calls, decisions: Sequence[Decision], every: bool = False) -> dict[str, Twice]:
    """The call statements (``every``: simple statements) the member the decisions make
    runs more often than both the new upstream and the old runner (twice at least), by key
    (none without the old runner's counts): what verify reports as OP512."""
    old = calls.runner_calls([d.block for d in decisions], every)
    if old is None:
        return {}
    new = calls.upstream_statements if every else calls.upstream_calls
    out = _output_calls(calls, decisions, every)
    return {
        k: Twice(k, n, new[k], old[k]) for k, n in out.items() if n >= 2 and n > max(old[k], new[k])
    }


def added_repeats(
    calls: Calls, now: Sequence[Decision], tried: Sequence[Decision], every: bool = False
) -> list[Twice]:
    """The call statements (``every``: simple statements) the member ``tried`` makes runs
    more often than the one ``now`` makes, and more often than both the new upstream and
    the old runner (twice at least): what verify would newly report (OP512). Without the
    old runner's counts, more often than the new upstream: verify reads the old runner,
    which may not run it as often."""
    if calls.runner_calls([d.block for d in tried], every) is not None:
        before = repeated(calls, now, every)
        return [
            twice
            for key, twice in repeated(calls, tried, every).items()
            if key not in before or twice.output > before[key].output
        ]
    new, was = calls.upstream_calls, _output_calls(calls, now)
    return [
        Twice(key, n, new[key], None)
        for key, n in _output_calls(calls, tried).items()
        if n >= 2 and n > max(new[key], was[key])
    ]


def remover(
    calls: Calls,
    history: History,
    decisions: Sequence[Decision],
    key: str,
    every: bool = False,
) -> Decision | None:
    """The block whose removal of the old runner's copy of the call ``key`` (``every``:
    of the statement) is not in the output: it is a conflict, or follows upstream (the
    call kept at both places); None when no block removed one."""
    for decision in decisions:
        if not decision.conflict and not decision.follow:
            continue
        replaced = history.replaced_text(decision.block)
        if replaced is None:
            continue
        if calls.counted(replaced, every)[key] <= calls.counted(decision.block.code, every)[key]:
            continue
        return decision
    return None


def moved_repeats(
    calls: Calls, history: History, now: Sequence[Decision], tried: Sequence[Decision]
) -> list[Twice]:
    """The statements (not call statements) the member ``tried`` makes runs more often than
    ``now``'s and than both the new upstream and the old runner, where the block that took
    the old runner's copy away is an open conflict of ``tried`` (omni moved the statement;
    upstream's copy stays until that conflict is resolved)."""
    return [
        twice
        for twice in added_repeats(calls, now, tried, every=True)
        if (found := remover(calls, history, tried, twice.key, every=True)) is not None
        and found.conflict
    ]


def added_calls(calls: Calls, decision: Decision, every: bool = False) -> Counter[str]:
    """The call statements (``every``: simple statements) a placed block puts into the
    output (none for a conflict, an edit that follows upstream, a compound header, or a
    plain deletion)."""
    block = decision.block
    if decision.conflict or decision.follow or block.kind is BlockKind.HEADER:
        return Counter()
    if block.kind is BlockKind.DELETION and decision.code is None:
        return Counter()
    return calls.counted(decision.code if decision.code is not None else block.code, every)


def _output_calls(calls: Calls, decisions: Sequence[Decision], every: bool = False) -> Counter[str]:
    """The call statements (``every``: simple statements) of the member the decisions
    make: the new upstream's, less the statements placed blocks replace, plus the blocks'
    own."""
    counts = (calls.upstream_statements if every else calls.upstream_calls).copy()
    for decision in decisions:
        placed = not decision.conflict and not decision.follow
        held = decision.slot.held() if decision.slot is not None else ()
        if placed and held and decision.block.kind is not BlockKind.HEADER:
            counts -= calls.counted_at(held, every)
        counts += added_calls(calls, decision, every)
    return counts
