"""The resolved rule: a maintainer's recorded choice (``omni-port resolve``) wins, while it
holds; one that no longer does turns the block back into a conflict that says why.

A resolution holds while upstream still has what it was recorded against (the statement
it follows in its body, the statements it replaces, a signature's upstream signature) and,
when it carries the code to put there, while the block's own code is the one it was
recorded for. Like git rerere: the same conflict gets the same answer, another one is
asked again, never answered silently by the anchor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import Block, Resolution, Rule, code_digest
from omni_port.sync.context import Context, Decision, Settled, placed
from omni_port.sync.evidence.code import shorten
from omni_port.sync.evidence.places import Index, Scored, resolved_slot
from omni_port.sync.facts import MemberFacts, Places, keys_of
from omni_port.sync.rule import Silent


class Resolved(Silent):
    name = Rule.RESOLVED
    reads = (Places,)

    def decide(self, ctx: Context) -> Decision | None:
        """The place the block's recorded resolution names, with its code, while it holds."""
        resolution = ctx.block.anchor.resolution
        if resolution is None or _stale_code(ctx.block, resolution):
            return None
        resolved = resolved_slot(ctx.places.index, ctx.block)
        if resolved is None:
            return None
        here = Scored(resolved, 1.0, 1.0)
        reason = (
            f"dropped as obsolete: {_recorded(resolution)}" if resolution.dropped else "resolved"
        )
        return replace(placed(ctx.block, here, (here,), reason), code=resolution.code)

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        """A block whose resolution did not hold is a conflict, whatever else placed it:
        the maintainer's answer was for another conflict."""
        if not any(_unheld(d) for d in decisions):
            return None
        return [_refused(facts.places.index, d) if _unheld(d) else d for d in decisions]

    def sign(self, ctx: Context) -> Decision | None:
        """A signature edit resolved with the signature to write: it holds while upstream's
        signature is the one it was recorded against."""
        resolution = ctx.block.anchor.resolution
        if resolution is None or resolution.code is None:
            return None
        if _stale_code(ctx.block, resolution):
            reason = f"{_recorded(resolution)} was made for other code of the block"
            return Decision(ctx.block, None, 0.0, True, (), reason)
        if resolution.replaces != (ctx.member.key,):
            now = shorten(ctx.member.key, 70)
            reason = f"{_recorded(resolution)} no longer holds: upstream's signature is now `{now}`"
            return Decision(ctx.block, None, 0.0, True, (), reason)
        return Decision(ctx.block, None, 1.0, False, (), "resolved", code=resolution.code)


def _stale_code(block: Block, resolution: Resolution) -> bool:
    return resolution.code is not None and resolution.made_for != code_digest(block.code)


def _unheld(decision: Decision) -> bool:
    return decision.block.anchor.resolution is not None and Rule.RESOLVED not in decision.rules


def _refused(index: Index, decision: Decision) -> Decision:
    resolution = decision.block.anchor.resolution
    assert resolution is not None
    best = decision.candidates[0] if decision.candidates else None
    slot, score = (best.slot, best.score) if best is not None else (decision.slot, 0.0)
    reason = _why_not(index, decision.block, resolution)
    return replace(
        decision,
        slot=slot,
        score=score,
        conflict=True,
        reason=reason,
        code=None,
        follow=False,
        release="",
        lag=None,
        review=None,
        dispute=None,
    )


def _recorded(resolution: Resolution) -> str:
    who = f" by {resolution.by}" if resolution.by else ""
    why = f" ({shorten(resolution.why, 60)})" if resolution.why else ""
    return f"the resolution recorded{who}{why}"


def _why_not(index: Index, block: Block, resolution: Resolution) -> str:
    """Why the recorded resolution does not hold on this upstream, with what changed."""
    head = _recorded(resolution)
    if _stale_code(block, resolution):
        return f"{head} was made for other code of the block: omni changed it since"
    bodies = [suite for path, suite in index.suites if path == resolution.path]
    if not bodies:
        where = shorten(resolution.path[-1], 50) if resolution.path else "the method body"
        return f"{head} no longer holds: upstream has no body `{where}` any more"
    keys = [stmt.key for suite in bodies for stmt in suite.stmts]
    if resolution.after and resolution.after not in keys:
        return (
            f"{head} no longer holds: upstream no longer has "
            f"`{shorten(resolution.after, 50)}` in that body"
        )
    start = keys.index(resolution.after) + 1 if resolution.after else 0
    stmts = [stmt for suite in bodies for stmt in suite.stmts]
    found = keys_of(stmts[start : start + len(resolution.replaces)])
    was = shorten("; ".join(resolution.replaces), 50)
    now = shorten("; ".join(found), 50) or "nothing"
    return f"{head} no longer holds: upstream changed what it replaces (`{was}` is now `{now}`)"


RULE = Resolved()
