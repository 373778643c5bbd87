"""The interface of a placement rule: the questions the engine asks about each block.

A rule is one kind of evidence, answering from the facts (``sync.facts``) alone. The
engine (``locate``) asks each question of the rules in ``rules.RULES`` order, and the
first rule with an answer has it: that order is the precedence between kinds of evidence.
A rule answers only the questions its evidence speaks to; every other hook of ``Silent``
answers None, "nothing to say". The engine's own steps (ranking the places, the release
an edit was written against, the walk through upstream history) are no questions: they
read facts every rule shares.
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
    """The questions, in the order the engine meets them for one block."""

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

    def sign(self, ctx: Context) -> Decision | None:
        return None
