"""No call statement runs more often than in both the new upstream and the old runner
(docs/design.md rule 5: a call upstream moved is moved, never duplicated).

A placed block that adds one more copy of a call, where one side moved it and the other
kept it (or where the block that took the old copy away is a conflict), is a conflict
naming the call and that block; or, when it only inserts a copy of upstream's call a few
statements off upstream's own, past code the runners lacked, it is followed as upstream's
copy, so the call runs once, at upstream's place. A maintainer's recorded place stands
(verify's OP512 is the net there).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import Decision, conflict_at, followed
from omni_port.sync.evidence.calls import Twice, added_calls, remover, repeated
from omni_port.sync.evidence.code import binds_locals, shorten
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.facts import Calls, Flows, History, MemberFacts, Stmt, Syntax
from omni_port.sync.rule import Silent


class RunOnce(Silent):
    name = Rule.RUN_ONCE
    reads = (Syntax, Flows, History, Calls)

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        extra = repeated(facts.calls, decisions)
        found: list[Decision] = []
        for decision in decisions:
            added = added_calls(facts.calls, decision)
            twice = [k for k in extra if added[k]]
            if twice and decision.block.anchor.resolution is None:
                key = twice[0]
                took = remover(facts.calls, facts.history, decisions, key)
                shifted = _shifted(facts, decision, took, key) if took is not None else None
                decision = shifted or _twice(facts, decision, extra[key], _removed(took))
            found.append(decision)
        found = _moved(facts, found, set(extra))
        return found if found != list(decisions) else None


def _moved(facts: MemberFacts, decisions: list[Decision], calls: set[str]) -> list[Decision]:
    """The decisions, where a placed block would run a statement more often than the new
    upstream and the old runner while the block that took the old copy away is an open
    conflict (omni moved it; upstream's copy stays until that is resolved): a conflict
    naming that one (issue 44: run-once by construction, for any statement)."""
    extra = repeated(facts.calls, decisions, every=True)
    if not extra.keys() - calls:
        return decisions
    found: list[Decision] = []
    for decision in decisions:
        added = added_calls(facts.calls, decision, every=True)
        for key in [k for k in extra if added[k] and k not in calls]:
            took = remover(facts.calls, facts.history, decisions, key, every=True)
            if took is not None and took.conflict and decision.block.anchor.resolution is None:
                decision = _twice(facts, decision, extra[key], _removed(took))
                break
        found.append(decision)
    return found


def _removed(remover: Decision | None) -> str:
    """Why the old runner's removal of a copy is not in the output ("" without one)."""
    if remover is None:
        return ""
    fate = "is a conflict" if remover.conflict else "follows upstream there"
    return f"{remover.block.id}, which took the old copy away in the runner, {fate}"


def _shifted(
    facts: MemberFacts, decision: Decision, remover: Decision, key: str
) -> Decision | None:
    """``decision``, an edit that only inserts a copy of the call ``key``, followed as
    upstream's own copy a few statements off; None when it is not that.

    ``remover`` took the runner's old copy away and follows upstream, whose copy stands at
    its place, after statements the runners lacked there (upstream code they never had).
    Between the inserted copy and upstream's stand only those and bindings of plain locals
    the runners had too, which call nothing and which the call does not read: the runner's
    copy is upstream's call written where the runners lacked what upstream put before it.
    One copy runs, upstream's; the block keeps nothing of omni's."""
    block, mine, theirs = decision.block, decision.slot, remover.slot
    if block.marked or block.kind is not BlockKind.INSERTION or remover.lag is None:
        return None  # the remover follows upstream as the runners' lag, or this is no shift
    flow = facts.flows.flow_of(block.code)
    if mine is None or theirs is None or mine.suite is not theirs.suite or flow is None:
        return None
    if len(facts.syntax.parsed(block.code) or []) != 1 or facts.calls.counted(block.code)[key] != 1:
        return None
    stmts = mine.suite.stmts
    held = range(theirs.index, theirs.index + theirs.span)
    copy = next(
        (i for i in held if facts.calls.counted(facts.syntax.source([stmts[i]]))[key]), None
    )
    if copy is None:
        return None
    span = range(mine.index, copy) if mine.index <= copy else range(copy + 1, mine.index)
    between = [stmts[i] for i in span]
    lacked = [stmts[i] for i in span if i in held]
    bound = [stmts[i] for i in span if i not in held]
    if not lacked or not all(_local_binding(facts, s, flow.reads) for s in bound):
        return None
    code = shorten(facts.calls.call_code(block.code, key))
    names = ", ".join(f"`{n}`" for s in bound for n in _targets(facts, s))
    beside = facts.history.which_brought(facts.history.brought_now([lacked[-1].key], mine.path))
    if not beside:
        named = facts.history.named(remover.lag.changed_by)
        beside = f"`{shorten(lacked[-1].key, 60)}`, which {named} brought"
    reason = (
        f"omni's `{code}` is upstream's own copy, {len(between)} statements off: "
        f"{remover.block.id} follows upstream where it took the runner's copy away, and "
        f"upstream's copy stands there, beside {beside} (the runners never had it there)"
    )
    if names:
        reason += f"; between the two, the runners only bind {names}, which the call does not read"
    here = Scored(Slot(mine.suite, mine.path, mine.index, 0), decision.score, 1.0)
    found = followed(block, here, decision.candidates, f"{reason}; one copy runs, upstream's")
    stands = Slot(mine.suite, mine.path, copy, 1)
    return replace(found, release=remover.release, lag=remover.lag, stands=stands)


def _targets(facts: MemberFacts, stmt: Stmt) -> list[str]:
    """The names an assignment binds, in order (its comprehensions' own names aside)."""
    nodes = facts.syntax.parsed(facts.syntax.source([stmt])) or []
    found = [t for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign) for t in _assigned(n)]
    return [n.id for t in found for n in ast.walk(t) if isinstance(n, ast.Name)]


def _assigned(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _local_binding(facts: MemberFacts, stmt: Stmt, reads: frozenset[str]) -> bool:
    """Whether ``stmt`` only binds plain locals none of ``reads`` names, calling nothing."""
    return binds_locals(stmt) and not stmt.writes & reads and not facts.syntax.makes_calls([stmt])


def _twice(facts: MemberFacts, decision: Decision, counts: Twice, remover: str) -> Decision:
    """``decision`` as a conflict: at its place, a call would run more often than in the
    new upstream and the old runner; the reason names the upstream change that made the
    counts differ, or the conflict that leaves upstream's copy in."""
    by = facts.calls.calls_changed_by(counts.key)
    if remover:
        why = remover
    elif by:
        why = f"upstream moved or added it in {by}"
    else:
        why = "upstream keeps its own copy elsewhere"
    said = counts.said(facts.calls, decision.code or decision.block.code)
    return conflict_at(decision, f"{said}: {why}; keep one copy")


RULE = RunOnce()
