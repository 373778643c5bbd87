"""A lag is followed only where it does something (docs/design.md rule 7).

Upstream code the runners never had is followed (``upstream-history``), or kept beside
omni's code that replaces what came with it (``intent``, ``merge3``). A plain binding of
locals among it does something only through its readers: when upstream reads what it
binds only in statements omni's placed blocks replace or delete (or in other such
bindings), and nothing in the output reads it (``evidence.readers``), it stays out, with
a note naming the upstream change and omni's blocks that took its readers out. The
decision then holds only with those blocks placed (``relies_on``): if one of them ends a
conflict, its readers are back, and so is the decision (a conflict, ``coupled``).
A call statement, a compound statement or a store to state does something by itself: it
is followed as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import Decision
from omni_port.sync.evidence.code import short
from omni_port.sync.evidence.history import NeverHad
from omni_port.sync.evidence.places import Slot
from omni_port.sync.evidence.readers import Reading, Unread, unread
from omni_port.sync.facts import Flows, History, MemberFacts, Places, Stmt, Syntax
from omni_port.sync.rule import Silent

#: How upstream history's note on a followed lag ends (``evidence.history.explain``).
_FOLLOWED = "; the new upstream is followed"
#: What this rule's note on a deletion it keeps out says after upstream history's.
_OUT = "; it stays out: "


class UnreadLag(Silent):
    name = Rule.UNREAD_LAG
    reads = (Syntax, Places, Flows, History)

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        """Each lag judged on the member as it stands, a deletion this rule kept out judged
        again as followed: the blocks that took its readers out may be conflicts now."""
        judged = [_as_followed(d) if _kept_out(d) else d for d in decisions]
        lags = [_lag(facts, d) for d in judged]
        candidates = [s for stmts in lags for s in stmts]
        found = {}
        if candidates:
            found = {id(u.stmt): u for u in unread(_reading(facts), judged, candidates)}
        ids = [d.block.id for d in decisions]
        result = list(decisions)
        for position, (decision, trial) in enumerate(zip(decisions, judged, strict=True)):
            dead = [found[id(s)] for s in lags[position] if id(s) in found]
            if trial is not decision:
                # Kept out before: it stays out while all of it is unread, else it follows.
                kept = trial.slot is not None and len(dead) == trial.slot.span
                result[position] = decision if kept else trial
            elif dead and decision.follow:
                result[position] = _followed_out(decision, dead, ids) or decision
            elif dead:
                result[position] = _widened(facts, decision, dead, decisions) or decision
        return result


def _reading(facts: MemberFacts) -> Reading:
    return Reading(facts.syntax, facts.places, facts.flows)


def _kept_out(decision: Decision) -> bool:
    """Whether ``decision`` is a deletion followed as the runners' lag that this rule
    kept out."""
    return (
        not decision.follow
        and not decision.conflict
        and Rule.UNREAD_LAG in decision.rules
        and decision.block.kind is BlockKind.DELETION
        and decision.lag is not None
        and _OUT in decision.reason
    )


def _as_followed(decision: Decision) -> Decision:
    """A deletion this rule kept out, followed as upstream history decided it."""
    said = decision.reason.split(_OUT, 1)[0]
    return replace(decision, follow=True, reason=f"{said}{_FOLLOWED}", relies_on=())


def _lag(facts: MemberFacts, decision: Decision) -> tuple[Stmt, ...]:
    """The upstream statements the runners never had that ``decision`` leaves in the
    output: a deletion followed as the runners' lag, or what a placed block's statements
    that the runners never had keep beside it."""
    slot, block = decision.slot, decision.block
    if decision.conflict or slot is None or decision.lag is None or block.anchor.resolution:
        return ()
    if decision.follow:
        return slot.held() if block.kind is BlockKind.DELETION else ()
    never = facts.history.never_had(block)
    if never is None:
        return ()
    return (*_beside(never, slot, -1), *_beside(never, slot, 1))


def _beside(never: NeverHad, slot: Slot, step: int) -> tuple[Stmt, ...]:
    """The run of statements the runners never had right before (``step`` -1) or after
    (1) ``slot``, nearest first."""
    stmts = slot.suite.stmts
    at = slot.index - 1 if step < 0 else slot.index + slot.span
    found: list[Stmt] = []
    while 0 <= at < len(stmts) and never.holds(stmts[at].key):
        found.append(stmts[at])
        at += step
    return tuple(found)


def _followed_out(decision: Decision, dead: list[Unread], ids: list[str]) -> Decision | None:
    """A deletion followed as the runners' lag, taken as omni's deletion after all: every
    statement it would follow is unread (None when some is read); ``ids``: the member's
    blocks, in order."""
    assert decision.slot is not None
    if len(dead) != decision.slot.span:
        return None
    said = decision.reason.removesuffix(_FOLLOWED)
    reason = f"{said}{_OUT}{_why(dead, ids)}"
    return replace(decision, follow=False, reason=reason, relies_on=_relies(decision, dead))


def _widened(
    facts: MemberFacts, decision: Decision, dead: list[Unread], decisions: Sequence[Decision]
) -> Decision | None:
    """A placed block that also replaces the unread statements the runners never had
    beside it, as far as they run unbroken from its place (None when none does, or
    another decision's place lies among them)."""
    slot = decision.slot
    assert slot is not None
    never = facts.history.never_had(decision.block)
    assert never is not None
    gone = {id(u.stmt) for u in dead}
    ids = [d.block.id for d in decisions]
    before = _run(_beside(never, slot, -1), gone)
    after = _run(_beside(never, slot, 1), gone)
    if not before and not after:
        return None
    wider = Slot(
        slot.suite, slot.path, slot.index - len(before), slot.span + len(before) + len(after)
    )
    if any(_inside(d.slot, wider) for d in decisions if d is not decision and d.slot is not None):
        return None
    out = sorted((u for u in dead if any(u.stmt is s for s in (*before, *after))), key=_line)
    code = short("; ".join(u.stmt.key for u in out))
    # The note upstream history left says these statements stay: all of them out, it says
    # so instead; some of them, the note says which.
    kept = never.quoted(decision.block.anchor.replaced)
    stays = f"upstream code the runners never had here stays: `{kept}`"
    every = len(out) == len(_beside(never, slot, -1)) + len(_beside(never, slot, 1))
    if every and stays in decision.reason:
        said = decision.reason.replace(
            stays, f"upstream code the runners never had stays out: `{code}`"
        )
        reason = f"{said}; {_why(out, ids)}"
    else:
        reason = f"{decision.reason}; of it, `{code}` stays out: {_why(out, ids)}"
    return replace(decision, slot=wider, reason=reason, relies_on=_relies(decision, out))


def _run(stmts: tuple[Stmt, ...], gone: set[int]) -> tuple[Stmt, ...]:
    """The statements of ``stmts`` (nearest first) up to the first that is not ``gone``."""
    found: list[Stmt] = []
    for stmt in stmts:
        if id(stmt) not in gone:
            break
        found.append(stmt)
    return tuple(found)


def _inside(other: Slot, wider: Slot) -> bool:
    """Whether ``other`` lies among the statements ``wider`` spans (beyond its ends)."""
    if other.suite is not wider.suite:
        return False
    start, stop = wider.index, wider.index + wider.span
    if not other.span:
        return start < other.index < stop
    return other.index < stop and other.index + other.span > start


def _line(found: Unread) -> int:
    return found.stmt.start


def _why(dead: list[Unread], order: list[str]) -> str:
    """What the note says of unread statements: the names they bind, and omni's blocks
    that took upstream's readers of them out (in ``order``, the member's block ids)."""
    names = sorted({n for u in dead for n in u.stmt.writes})
    shown = ", ".join(f"`{n}`" for n in names)
    blocks = sorted({b for u in dead for b in u.removed_by}, key=order.index)
    ids = ", ".join(b.rsplit(".", 1)[-1] for b in blocks)
    return (
        f"it binds {shown}, which nothing in the output reads: upstream reads "
        f"{'it' if len(names) == 1 else 'them'} only in code omni's {ids} "
        f"{'takes' if len(blocks) == 1 else 'take'} out"
    )


def _relies(decision: Decision, dead: list[Unread]) -> tuple[str, ...]:
    """The blocks ``decision`` holds with once it keeps the unread statements out."""
    own = decision.block.id
    found = dict.fromkeys((*decision.relies_on, *(b for u in dead for b in u.removed_by)))
    return tuple(b for b in found if b != own)


RULE = UnreadLag()
