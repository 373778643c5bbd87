"""An upstream exit the output follows is checked against omni's exits (issue 47).

Upstream code the output follows (a lag a followed deletion brings back, or code upstream
added after the base) may hold an exit: a ``return`` or a ``raise``. Where omni changed
every copy of it the method has (a block replaced it, or omni's code runs right before it
on its straight path), else every other exit of its kind (its own code holds the exit, or
omni's code runs right before it), the new exit skips what omni does there: omni's output
object, a hand-off of state. Exits are compared like with like (``ExitKind``): a return of
a value with the returns of a value, a raise with the raises. An exit is the runners' own
when the base has it under the same headers and no followed edit brings it back.

The new exit gets a note naming the omni code it skips (OP314), on the decision whose
followed code brought it, else on the first block it skips. Where omni changed the value
every other exit of a value returns (each of them is omni's own code) and the exit came
with a followed edit, the caller relies on omni's value: that edit is a conflict instead,
and the maintainer decides (keep omni's deletion, or give the exit omni's treatment).
Exits omni left alone, a method where omni changed only some of them, and generators
(whose ``return`` ends an iteration: ``evidence.exits.generator``) say nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from omni_port.model import BlockKind, Rule, Suite
from omni_port.sync.context import Decision, conflict_at
from omni_port.sync.evidence.code import shorten
from omni_port.sync.evidence.exits import (
    Exit,
    ExitKind,
    code_exits,
    exits,
    generator,
    gist,
    kind_of,
)
from omni_port.sync.facts import History, MemberFacts, Syntax
from omni_port.sync.rule import Silent

#: Kinds of edits that put omni's code in place of upstream statements (a header edit
#: keeps upstream's bodies, and its exits, either way).
_CODE = frozenset({BlockKind.INSERTION, BlockKind.REPLACEMENT, BlockKind.DELETION})


@dataclass(frozen=True, slots=True)
class _Seen:
    """One exit of the output (upstream's, or omni's own in a placed block's code), or an
    upstream exit a placed block replaced."""

    kind: ExitKind
    key: str
    #: The decisions (by position) whose omni code changed it: the block that holds it or
    #: replaced it, or the blocks on the straight path right before it.
    treated: tuple[int, ...]
    #: Upstream's exit the runners never had (None for an exit they had, or omni's own).
    new: Exit | None = None
    #: The followed decision (by position) whose code brought the new exit, if one did.
    owner: int | None = None
    #: Omni's own exit: its code is a placed block's.
    omni: bool = False
    #: An upstream exit a placed block replaced: the keys of the returns of a value its
    #: code has instead.
    replaced_by: frozenset[str] | None = None


class EarlyExit(Silent):
    name = Rule.EARLY_EXIT
    reads = (Syntax, History)

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        body = facts.member.clauses[0] if facts.member.clauses else None
        nodes = facts.syntax.parsed(facts.syntax.source([facts.member]))
        if body is None or nodes is None or generator(nodes):
            return None
        seen = _seen(facts, decisions, body)
        notes: dict[int, list[str]] = {}
        refused: dict[int, list[str]] = {}
        for found in seen:
            peers = _peers(found, seen) if found.new is not None and not found.treated else []
            if not peers:
                continue
            said = _said(facts, found, peers, decisions)
            valued = found.kind is ExitKind.VALUE and all(_valued(p, found) for p in peers)
            if valued and found.owner is not None:
                refused.setdefault(found.owner, []).append(said)
                continue
            at = found.owner if found.owner is not None else min(peers[0].treated)
            notes.setdefault(at, []).append(said)
        result = []
        for position, decision in enumerate(decisions):
            if position in refused and decision.block.anchor.resolution is None:
                why = "; ".join(refused[position])
                decision = conflict_at(decision, f"{why}; {_REFUSED}")
            elif not decision.conflict:
                skips = "; ".join(notes.get(position, []))
                if skips != decision.skips:
                    decision = replace(decision, skips=skips)
            result.append(decision)
        return result


#: What the conflict of a followed edit whose exit skips omni's value says to do.
_REFUSED = (
    "the caller gets upstream's value where omni's code returns its own at every other such "
    "exit: give the new exit omni's treatment (edit it where it stands, then `omni-port "
    "continue`), or keep omni's deletion (`omni-port resolve`)"
)


def _peers(found: _Seen, seen: list[_Seen]) -> list[_Seen]:
    """The exits the runners had that ``found`` is judged against, when omni changed
    every one of them (none otherwise): upstream's own copies of it (a block replaced them
    or runs right before them), else every other exit of its kind in the output."""
    twins = [s for s in seen if s.new is None and not s.omni and s.key == found.key]
    if twins and all(s.treated for s in twins):
        return twins
    others = [s for s in seen if s.kind is found.kind and s.new is None and s.replaced_by is None]
    return others if others and all(s.treated for s in others) else []


def _valued(peer: _Seen, found: _Seen) -> bool:
    """Whether omni changed the value ``peer`` returns (its own exit, or what replaced it,
    returns another value than ``found``)."""
    if peer.omni:
        return peer.key != found.key
    return bool(peer.replaced_by) and found.key not in (peer.replaced_by or ())


def _seen(facts: MemberFacts, decisions: Sequence[Decision], member: Suite) -> list[_Seen]:
    """Every exit of the output (the method's body ``member`` with the decisions), in
    upstream order, omni's own after upstream's."""
    placed = [
        i
        for i, d in enumerate(decisions)
        if not d.conflict and not d.follow and d.slot is not None and d.block.kind in _CODE
    ]
    followed = [
        i
        for i, d in enumerate(decisions)
        if d.follow and not d.conflict and d.slot is not None and d.block.kind in _CODE
    ]
    had = _base_exits(facts)
    found: list[_Seen] = []
    for ex in exits(member):
        key = ex.stmt.key
        replacing = next((i for i in placed if _replaces(decisions[i], ex)), None)
        if replacing is not None:
            values = _values(facts, decisions[replacing])
            found.append(_Seen(ex.kind, key, (replacing,), replaced_by=values))
            continue
        treated = tuple(i for i in placed if _before(decisions[i], ex))
        owner = next((i for i in followed if _brings(facts, decisions[i], ex)), None)
        new = owner is not None or (had is not None and (key, ex.path) not in had)
        found.append(_Seen(ex.kind, key, treated, ex if new else None, owner))
    for i in placed:
        for own in code_exits(facts.syntax.parsed(_code(decisions[i])) or []):
            found.append(_Seen(own.kind, own.key, (i,), omni=True))
    return found


def _code(decision: Decision) -> str:
    return decision.code if decision.code is not None else decision.block.code


def _values(facts: MemberFacts, decision: Decision) -> frozenset[str]:
    """The keys of the returns of a value in a decision's code."""
    found = code_exits(facts.syntax.parsed(_code(decision)) or [])
    return frozenset(e.key for e in found if e.kind is ExitKind.VALUE)


def _replaces(decision: Decision, ex: Exit) -> bool:
    slot = decision.slot
    assert slot is not None
    return ex.within(slot.suite, slot.index, slot.index + slot.span)


def _before(decision: Decision, ex: Exit) -> bool:
    """Whether ``decision``'s omni code runs on the straight path right before ``ex``: in
    the exit's own suite, with only simple statements between (no branch, no exit)."""
    slot = decision.slot
    assert slot is not None
    stop = slot.index + slot.span
    if slot.suite is not ex.suite or stop > ex.index or not _code(decision).strip():
        return False  # elsewhere, after it, or a deletion, which runs nothing
    between = ex.suite.stmts[stop : ex.index]
    return all(not s.clauses and kind_of(s) is None for s in between)


def _brings(facts: MemberFacts, decision: Decision, ex: Exit) -> bool:
    """Whether the followed ``decision`` brings ``ex`` into the output: upstream's code
    at its place holds the exit, and the runner's code there did not."""
    slot = decision.slot
    assert slot is not None
    if not ex.within(slot.suite, slot.index, slot.index + slot.span):
        return False
    own = facts.syntax.parsed(decision.block.code) or []
    return ex.stmt.key not in {e.key for e in code_exits(own)}


def _base_exits(facts: MemberFacts) -> Counter[tuple[str, tuple[str, ...]]] | None:
    """The base's exits of the member, by key and enclosing headers (None without it)."""
    base = facts.history.base
    if base is None or base.member is None or not base.member.clauses:
        return None
    return Counter((e.stmt.key, e.path) for e in exits(base.member.clauses[0]))


def _said(
    facts: MemberFacts, found: _Seen, peers: list[_Seen], decisions: Sequence[Decision]
) -> str:
    """What the note says of one new exit: where it stands, and the omni code its peers
    run that it skips."""
    new = found.new
    assert new is not None
    where = f" under `{shorten(new.path[-1], 50)}`" if new.path else ""
    ids = sorted({i for s in peers for i in s.treated})
    blocks = ", ".join(
        f"{decisions[i].block.id.rsplit('.', 1)[-1]} (`{_gist(facts, decisions[i])}`)" for i in ids
    )
    twins = all(p.key == found.key and not p.omni for p in peers)
    what = "copy of it" if twins else found.kind.value
    return (
        f"upstream's `{shorten(found.key, 60)}`{where}, which the runners never had"
        f"{_since(facts, new)}, skips "
        f"what omni's code does at every other {what} in the method ({len(peers)}): {blocks}"
    )


def _since(facts: MemberFacts, new: Exit) -> str:
    """The upstream change that gave the exit its text, for the note (docs/design.md rule
    6): the one that edited an older statement into it, else the one that brought it
    ("" without history)."""
    came = facts.history.brought_now([new.stmt.key], new.path)
    if not came or not (came[0].edited or came[0].by):
        return ""
    named = facts.history.named
    if came[0].edited:
        return f" ({named(came[0].edited)} changed it into this text)"
    return f" ({named(came[0].by)} brought it)"


def _gist(facts: MemberFacts, decision: Decision) -> str:
    """A decision's code in a few words, comments left out."""
    nodes = facts.syntax.parsed(_code(decision))
    return shorten(gist(nodes) if nodes is not None else _code(decision), 50)


RULE = EarlyExit()
