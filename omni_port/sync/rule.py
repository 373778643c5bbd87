"""The interface of a placement rule: the questions the engine asks about each block and,
once every block of a member is decided, about the member's decisions.

A rule is one kind of evidence, answering from the facts (``sync.facts``) alone. The
engine (``locate``) asks each question of the rules in ``rules.RULES`` order, and the
first rule with an answer has it: that order is the precedence between kinds of evidence.
A rule answers only the questions its evidence speaks to; every other hook of ``Silent``
answers None, "nothing to say". A member rule (``rules.MEMBER_RULES``) answers ``revise``
alone: the engine asks it after ``settle``, again from the first rule after any rule
changed a decision, until none changes one. The engine's own steps (ranking the places,
the release an edit was written against, the walk through upstream history) are no
questions: they read facts every rule shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from omni_port.model import Rule
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Narrowed,
    Settled,
    Tie,
)
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import Scored
from omni_port.sync.facts import MemberFacts


class PlacementRule(Protocol):
    """The questions, in the order the engine meets them for one block, then for its member."""

    #: The rule's name, as the engine stamps it into ``decided_by``.
    name: ClassVar[Rule]

    def decide(self, ctx: Context) -> Decision | None:
        """Before any place is scored: the whole decision."""

    def narrow(self, ctx: Context) -> Narrowed | None:
        """Fewer candidates (``ctx.top``), when the rule rules some out."""

    def second(self, ctx: Context) -> Answer | None:
        """The best place scores too little on its own: another kind of evidence for one
        of the candidates."""

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """The statements the block replaced changed upstream (or the edit was written
        against an older release, ``rebase``): what to put at ``best``."""

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Two places score alike: which one, or why neither."""

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """A place about to be taken: a conflict or another decision instead, or a note."""

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        """Every block of a member decided: the decisions, settled together."""

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        """Every decision of the member settled: each one as it can stand with the others
        (the same object when it can as it is), or None when all can. A rule's revision of
        a decision it already revised must change nothing, or the member never settles."""

    def sign(self, ctx: Context) -> Decision | None:
        """A signature edit whose signature upstream changed: the new signature."""


class Silent:
    """A rule that has nothing to say to any question; real rules override some hooks."""

    name: ClassVar[Rule]

    def decide(self, ctx: Context) -> Decision | None:
        return None

    def narrow(self, ctx: Context) -> Narrowed | None:
        return None

    def second(self, ctx: Context) -> Answer | None:
        return None

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        return None

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        return None

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        return None

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        return None

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        return None

    def sign(self, ctx: Context) -> Decision | None:
        return None
