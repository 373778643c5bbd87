"""The resolved rule: a maintainer's recorded choice (``omni-port resolve``) wins."""

from __future__ import annotations

from omni_port.model import Rule
from omni_port.sync.context import Context, Decision, placed
from omni_port.sync.evidence.places import Scored, resolved_slot
from omni_port.sync.rule import Silent


class Resolved(Silent):
    name = Rule.RESOLVED

    def decide(self, ctx: Context) -> Decision | None:
        """The place the block's recorded resolution names, while it still exists."""
        resolved = resolved_slot(ctx.index, ctx.block)
        if resolved is None:
            return None
        here = Scored(resolved, 1.0, 1.0)
        return placed(ctx.block, here, (here,), "resolved")


RULE = Resolved()
