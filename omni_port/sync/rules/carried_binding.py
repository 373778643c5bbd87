"""A block that reads a local the base's method bound, which upstream took out of the
method, carries the base's binding of it before its code (reported for review, OP313).

Only a binding that is a plain read of attributes off ``self`` or a parameter that upstream
still reads, of a local the method rebinds nowhere (``History.carried``), is carried:
omni's code then reads what it read in the runner. A block with a local it cannot carry is
left to the coupled rule, which makes it a conflict (nothing binds the name there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import Decision
from omni_port.sync.evidence.bindings import lost
from omni_port.sync.facts import Flows, History, MemberFacts
from omni_port.sync.rule import Silent


class CarriedBinding(Silent):
    name = Rule.CARRIED_BINDING
    reads = (Flows, History)

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        """Each placed block with the bindings it lost, judged against the member as it
        stands (a block carried here binds the name for the others only once revised)."""
        return [_carried(facts, d, decisions) or d for d in decisions]


def _carried(
    facts: MemberFacts, decision: Decision, decisions: Sequence[Decision]
) -> Decision | None:
    """``decision`` with the base's bindings of the locals it lost put before its code;
    None when it lost none, one cannot be carried, or it places no code of its own."""
    if decision.conflict or decision.follow or decision.slot is None:
        return None
    if decision.carried or decision.block.kind in (BlockKind.HEADER, BlockKind.SIGNATURE):
        return None  # carried once; nothing goes before a header of omni's
    names = lost(facts.flows, facts.history, decision, decisions)
    texts = [facts.history.carried(name) for name in names]
    if not texts or any(text is None for text in texts):
        return None
    kept = "".join(t for t in texts if t is not None)
    text = decision.code if decision.code is not None else decision.block.code
    by = facts.history.named(facts.history.dropped_locals[names[0]])
    shown = ", ".join(f"`{t.strip()}`" for t in texts if t is not None)
    note = (
        f"it carries {shown}, which the base's method ran and {by} took out of it: omni's "
        "code reads it"
    )
    reason = f"{decision.reason}; {note}" if decision.reason else note
    return replace(decision, code=kept + text, reason=reason, carried=note)


RULE = CarriedBinding()
