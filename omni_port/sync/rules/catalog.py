"""The catalog rule: the maintainers' ``Location:`` line rules out places.

Among the places the anchor found plausible, the ones a Location line forbids go. The
catalog decides when it takes away the place the anchor preferred, or the runner-up that
kept the anchor's choice from being clear: then its best is taken on a lower score.
"""

from __future__ import annotations

from omni_port.model import Rule
from omni_port.sync.context import Context, Narrowed
from omni_port.sync.evidence.catalog import allows
from omni_port.sync.evidence.places import clear, clear_winner
from omni_port.sync.facts import Records
from omni_port.sync.rule import Silent


class Catalog(Silent):
    name = Rule.CATALOG
    reads = (Records,)

    def narrow(self, ctx: Context) -> Narrowed | None:
        """The candidates the block's Location line allows, best first; all of them when it
        allows none or says nothing (then other evidence, or a conflict, decides)."""
        constraint = ctx.records.constraint(ctx.block)
        if constraint is None:
            return None
        top = ctx.top
        kept = tuple(s for s in top if allows(constraint, s.slot, ctx.member) is not False) or top
        decisive = kept[0] is not top[0] or (
            len(top) > 1 and not clear_winner(top[0], top[1]) and clear(kept)
        )
        reason = f"the catalog says where it goes: {constraint.text}"
        return Narrowed(kept, decisive, reason)


RULE = Catalog()
