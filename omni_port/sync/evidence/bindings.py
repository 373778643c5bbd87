"""The names a member's decided blocks bind, and the locals of the base's method that
upstream took out of the member, which a decision's code still reads (docs/design.md rule
5: what omni's code depended on moved or went).

The carried-binding rule puts the base's binding of such a local before the block's code
when it can; the coupled rule makes a block that reads one nothing binds a conflict; a
conflict's report offers no place for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import BlockKind
from omni_port.sync.context import Decision
from omni_port.sync.evidence.code import parameters
from omni_port.sync.facts import Flows, History


def binds(flows: Flows, decision: Decision) -> frozenset[str]:
    """The names ``decision``'s code binds (a signature: its parameters)."""
    text = decision.code if decision.code is not None else decision.block.code
    if decision.block.kind is BlockKind.SIGNATURE:
        return frozenset(parameters(" ".join(text.split())))
    found = flows.flow_of(text)
    return found.writes if found is not None else frozenset()


def lost(
    flows: Flows, history: History, decision: Decision, decisions: Sequence[Decision]
) -> list[str]:
    """The locals the base's member bound and upstream took out of it that ``decision``'s
    code reads and none of the member's other placed ``decisions`` binds, sorted."""
    dropped = history.dropped_locals
    mine = flows.flow_of(decision.code if decision.code is not None else decision.block.code)
    if not dropped or mine is None:
        return []
    bound = {
        name
        for other in decisions
        if other is not decision and not other.conflict and not other.follow
        for name in binds(flows, other)
    }
    return sorted(n for n in mine.reads if n in dropped and n not in bound)


def lost_binding(
    flows: Flows, history: History, decision: Decision, decisions: Sequence[Decision]
) -> str:
    """Why ``decision``'s code reads a local that nothing binds where it goes (``lost``; ""
    when none): placed, it would read a name nothing binds, and the maintainer decides
    what stands for it."""
    names = lost(flows, history, decision, decisions)
    if not names:
        return ""
    name = names[0]
    return (
        f"it reads `{name}`, which the base's method bound and "
        f"{history.named(history.dropped_locals[name])} binds nowhere in it (upstream moved or "
        "removed it)"
    )
