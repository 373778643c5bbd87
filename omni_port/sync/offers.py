"""Which of a conflict's candidates are offered: only those a maintainer can take.

The engine ranks a conflict's candidate places (``locate``); this report step, run on its
answer, tries each one as `resolve` would record it and the next sync would replay it:
the member is decided again with the block resolved there, and the candidate is offered
only when that sync takes the place (the block placed there by its resolution, no placed
block of the member turned into a conflict), the place deletes no upstream statement the
block did not replace in its base, no call runs more often than in both the new upstream
and the old runner, and ``verify``'s checks of the module (a ``Judge``, given by the
caller: this stage does not verify) find no problem the output did not have already.
Every other candidate is withheld, and the conflict's reason says why, naming its place.

Nothing else changes: where blocks go, what is placed, and the order of the candidates
left (numbered ``#1``, ``#2`` as `resolve --at '#K'` takes them, since `resolve` reads the
same sync). Only conflicts with candidates are tried, each candidate once per sync.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from omni_port.model import Block, ModulePatches, Rule, Stmt, Upstream
from omni_port.report import candidate_place, shorten
from omni_port.sync.context import Decision
from omni_port.sync.decisions import Copied, Decided, decide_copy
from omni_port.sync.evidence.calls import added_repeats, moved_repeats
from omni_port.sync.evidence.code import unreplaced
from omni_port.sync.evidence.places import Scored, resolution_at
from omni_port.sync.splice import Built, assemble


@dataclass(frozen=True, slots=True)
class Trial:
    """A conflict's candidate tried: the module as the sync writes it, and as it would be
    with the block resolved at the candidate."""

    module: ModulePatches
    upstream: Upstream
    #: The block, with the resolution the candidate records.
    block: Block
    #: The module as written with every conflict left (the same for every trial).
    now: Built
    #: The module with the block resolved at the candidate.
    tried: Built


#: What ``verify`` would report of a trial that it does not of the output as written
#: ("" when nothing): ``CODE message`` of the first such problem.
Judge = Callable[[Trial], str]


def offered(decided: Decided, header: str, judge: Judge | None = None) -> Decided:
    """``decided`` with each conflict's candidates cut to those that work (see the module
    docstring); ``header`` opens the trial modules, ``judge`` says what verify would newly
    report of each (None: verify is not asked)."""
    tried = _Trying(decided, header, judge)
    copies = {ident: tried.copied(copied) for ident, copied in decided.copies.items()}
    return replace(decided, copies=copies)


@dataclass(slots=True)
class _Trying:
    """The trials of one module: its output as written, assembled once, on demand."""

    decided: Decided
    header: str
    judge: Judge | None
    _now: Built | None = None

    @property
    def now(self) -> Built:
        if self._now is None:
            self._now = assemble(self.decided, self.header)
        return self._now

    def copied(self, copied: Copied) -> Copied:
        if copied.facts is None or not any(_open(d) for d in copied.decisions):
            return copied
        decisions = tuple(self._cut(copied, d) if _open(d) else d for d in copied.decisions)
        return replace(copied, decisions=decisions)

    def _cut(self, copied: Copied, decision: Decision) -> Decision:
        """``decision`` with the candidates that do not work withheld, and why."""
        kept: list[Scored] = []
        withheld: dict[str, list[str]] = {}
        for candidate in decision.candidates:
            why = self.why_not(copied, decision, candidate)
            if not why:
                kept.append(candidate)
                continue
            why = "for the same reason" if why in decision.reason else why
            place = candidate_place(candidate.slot.line(), candidate.slot.span)
            withheld.setdefault(why, []).append(place)
        if not withheld:
            return decision
        head = "not offered" if kept else "no candidate works"
        said = "; ".join(f"{', '.join(places)} ({why})" for why, places in withheld.items())
        reason = f"{decision.reason}; {head}: {said}"
        return replace(decision, candidates=tuple(kept), reason=reason)

    def why_not(self, copied: Copied, decision: Decision, candidate: Scored) -> str:
        """Why taking ``candidate`` for ``decision``'s block would not work ("" when it
        would), cheapest question first."""
        block = decision.block
        resolution = resolution_at(candidate.slot)
        resolved = replace(block, anchor=replace(block.anchor, resolution=resolution))
        blocks = tuple(resolved if b.id == block.id else b for b in copied.blocks)
        trial = decide_copy(copied.copy, blocks, copied.facts, self.decided.rules)
        found = _refused(copied, trial, resolved, candidate)
        if found:
            return found
        deleted = deletes(block, candidate.slot.held())
        if deleted:
            return f"it would delete {deleted}, which the block did not replace in its base"
        twice = _repeats(copied, trial, block)
        if twice or self.judge is None:
            return twice
        copies = {**self.decided.copies, copied.copy.id: trial}
        tried = assemble(replace(self.decided, copies=copies), self.header)
        module, upstream = self.decided.module, self.decided.upstream
        shown = Trial(module, upstream, resolved, self.now, tried)
        problem = self.judge(shown)
        return f"verify would report {problem}" if problem else ""


def deletes(block: Block, held: Sequence[Stmt]) -> str:
    """The upstream statements of ``held`` (what a place has ``block`` replace) that the
    block did not replace in its base (``unreplaced``), quoted (upstream's `x = f()` and
    2 more); "" when it replaces only what it replaced there: upstream code the place
    deletes."""
    left = unreplaced(block.anchor.replaced, held)
    if not left:
        return ""
    more = f" and {len(left) - 1} more" if len(left) > 1 else ""
    return f"upstream's `{shorten(left[0].key, 60)}`{more}"


def _open(decision: Decision) -> bool:
    """A conflict with candidates to try (a signature has no place to choose)."""
    return decision.conflict and bool(decision.candidates) and decision.slot is not None


def _refused(copied: Copied, trial: Copied, resolved: Block, candidate: Scored) -> str:
    """Why `resolve` would refuse the candidate, or the next sync not replay it there
    ("" when neither): the sync does not place the block there by its resolution, or a
    block of the member the sync placed is a conflict then."""
    after = {d.block.id: d for d in trial.decisions}
    mine = after[resolved.id]
    if mine.conflict or Rule.RESOLVED not in mine.rules:
        return mine.reason or "the sync places it elsewhere"
    if mine.slot is None or mine.slot.key() != candidate.slot.key():
        # The record names the statement the block follows: the first one of that text.
        return "the next sync would put it elsewhere: the statement before it stands twice there"
    taken = [
        after[d.block.id] for d in copied.decisions if not d.conflict and after[d.block.id].conflict
    ]
    if taken:
        return f"it makes {taken[0].block.id} a conflict: {shorten(taken[0].reason, 120)}"
    return ""


def _repeats(copied: Copied, trial: Copied, block: Block) -> str:
    """Why the candidate would run a call more often than both the new upstream and the
    old runner, where the output as written does not, or a statement omni moved while the
    block that took its old copy away is a conflict ("" when it would not)."""
    facts = copied.facts
    assert facts is not None
    worse = added_repeats(facts.calls, copied.decisions, trial.decisions)
    worse = worse or moved_repeats(facts.calls, facts.history, copied.decisions, trial.decisions)
    return worse[0].said(facts.calls, block.code) if worse else ""
