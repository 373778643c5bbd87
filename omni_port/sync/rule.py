"""The interface of a placement rule: the questions the engine asks about each block and,
once every block of a member is decided, about the member's decisions.

A rule is one kind of evidence, answering from the facts (``sync.facts``) alone, read
from the providers it declares (``reads``). The
engine (``locate``) asks each question of the rules in ``rules.RULES`` order: that order
is the precedence between kinds of evidence. How the answers of several rules to one
question combine is the question's own, declared with it (``@combined``) and done here,
in one of the ways of ``Combine``. A rule answers only the questions its evidence speaks
to; every other hook of ``Silent`` answers None, "nothing to say". A member rule
(``rules.MEMBER_RULES``) answers ``revise`` alone, a module rule (``rules.MODULE_RULES``)
``revise_module`` alone. The engine's own steps (ranking the
places, the release an edit was written against, the walk through upstream history) are
no questions: they read facts every rule shares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import ClassVar, Protocol, TypeVar

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
from omni_port.sync.facts import MemberFacts, Provider


class Combine(Enum):
    """How the engine combines the answers of the rules to one question."""

    FIRST = "first"
    """The rules are asked in order until one answers: its answer has it, and no later
    rule is asked. A check's ``Dispute`` is an answer too: the place is taken, with it."""

    FIRST_PLACED = "first placed"
    """The rules are asked in order until an answer places the block: that one has it.
    An answer that is a conflict leaves later rules room to decide with their own evidence
    (omni's intent over an edit the statement merge cannot take); the first conflict
    stands when no answer places the block."""

    EACH = "each"
    """Every rule turns the member's decisions into new ones in turn, each rule seeing the
    decisions as the rules before it left them."""

    EACH_UNTIL_STILL = "each until still"
    """As ``EACH``, again from the first rule after any rule changed a decision, until
    none does: an earlier rule always judges what a later one changed before any later
    rule acts again."""


#: The way each question combines its answers, by hook name (filled by ``combined``).
COMBINED: dict[str, Combine] = {}

_Hook = TypeVar("_Hook", bound=Callable[..., object])


def combined(way: Combine) -> Callable[[_Hook], _Hook]:
    """Declares the hook's way of combining the rules' answers (``COMBINED``)."""

    def declare(hook: _Hook) -> _Hook:
        COMBINED[hook.__name__] = way
        return hook

    return declare


class PlacementRule(Protocol):
    """The questions, in the order the engine meets them for one block, then for its member."""

    #: The rule's name, as the engine stamps it into ``decided_by``.
    name: ClassVar[Rule]

    @property
    def reads(self) -> tuple[Provider, ...]:
        """The providers of facts the rule reads (``sync.facts``), and no other: what its
        answers rest on (a class attribute; tests/test_rule_facts.py checks it)."""

    @combined(Combine.FIRST)
    def decide(self, ctx: Context) -> Decision | None:
        """Before any place is scored: the whole decision."""

    @combined(Combine.FIRST)
    def narrow(self, ctx: Context) -> Narrowed | None:
        """Fewer candidates (``ctx.top``), when the rule rules some out."""

    @combined(Combine.FIRST)
    def second(self, ctx: Context) -> Answer | None:
        """The best place scores too little on its own: another kind of evidence for one
        of the candidates."""

    @combined(Combine.FIRST_PLACED)
    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """The statements the block replaced changed upstream (or the edit was written
        against an older release, ``rebase``): what to put at ``best``."""

    @combined(Combine.FIRST)
    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Two places score alike: which one, or why neither."""

    @combined(Combine.FIRST)
    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """A place about to be taken: a conflict or another decision instead, or a note."""

    @combined(Combine.EACH)
    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        """Every block of a member decided: the decisions, settled together."""

    @combined(Combine.EACH_UNTIL_STILL)
    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        """Every decision of the member settled: each one as it can stand with the others
        (the same object when it can as it is), or None when all can. A rule's revision of
        a decision it already revised must change nothing, or the member never settles."""

    @combined(Combine.EACH_UNTIL_STILL)
    def revise_module(
        self, facts: Sequence[MemberFacts], decisions: Sequence[Decision]
    ) -> list[Decision] | None:
        """Every copied member of a module decided and revised: the decisions of all of
        them in one list (``facts[i]``: the facts of the member of ``decisions[i]``), each
        as it can stand with the others, or None when all can. A member whose decisions
        change is revised again (``revise``) before the next question."""

    @combined(Combine.FIRST)
    def sign(self, ctx: Context) -> Decision | None:
        """A signature edit whose signature upstream changed: the new signature."""


class Silent:
    """A rule that has nothing to say to any question; real rules override some hooks."""

    name: ClassVar[Rule]
    reads: ClassVar[tuple[Provider, ...]] = ()

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

    def revise_module(
        self, facts: Sequence[MemberFacts], decisions: Sequence[Decision]
    ) -> list[Decision] | None:
        return None

    def sign(self, ctx: Context) -> Decision | None:
        return None


# --- the ways of combining answers (``Combine``) ----------------------------------------------

_T = TypeVar("_T")
_S = TypeVar("_S")


def first(
    rules: Sequence[PlacementRule], ask: Callable[[PlacementRule], _T | None]
) -> tuple[Rule, _T] | None:
    """``Combine.FIRST``: the first answer and the name of the rule that gave it (None when
    no rule answers)."""
    for rule in rules:
        found = ask(rule)
        if found is not None:
            return rule.name, found
    return None


def first_placed(
    rules: Sequence[PlacementRule],
    ask: Callable[[PlacementRule], Answer | None],
    taken: Callable[[Answer, Rule], Decision],
) -> Decision | None:
    """``Combine.FIRST_PLACED``: the first answer that, ``taken``, places the block, else
    the first conflict (None when no rule answers)."""
    found: Decision | None = None
    for rule in rules:
        answer = ask(rule)
        if answer is None:
            continue
        decision = taken(answer, rule.name)
        if not decision.conflict:
            return decision
        found = found or decision
    return found


def each(
    rules: Sequence[PlacementRule],
    decisions: list[Decision],
    ask: Callable[[PlacementRule, list[Decision]], Sequence[_S] | None],
    apply: Callable[[Decision, _S, Rule], Decision],
) -> list[Decision]:
    """``Combine.EACH``: the decisions as every rule in turn leaves them, each new answer
    ``apply``-d to the decision it replaces."""
    for rule in rules:
        found = ask(rule, decisions)
        if found is not None:
            decisions = [apply(o, n, rule.name) for o, n in zip(decisions, found, strict=True)]
    return decisions


def each_until_still(
    rules: Sequence[PlacementRule],
    decisions: list[Decision],
    ask: Callable[[PlacementRule, list[Decision]], Sequence[Decision] | None],
    apply: Callable[[Decision, Decision, Rule], Decision],
    label: str,
) -> list[Decision]:
    """``Combine.EACH_UNTIL_STILL``: as ``each``, again from the first rule after any rule
    changed a decision (an answer of the same objects changes none), until none does.
    A member (``label``) that still changes after ``ROUNDS`` changes is an internal error:
    a rule that revises its own revision again, not a loop without end."""
    position = rounds = 0
    while position < len(rules):
        rule = rules[position]
        found = ask(rule, decisions)
        if found is None or all(n is o for o, n in zip(decisions, found, strict=True)):
            position += 1
            continue
        decisions = [apply(o, n, rule.name) for o, n in zip(decisions, found, strict=True)]
        position, rounds = 0, rounds + 1
        if rounds > ROUNDS:
            raise RuntimeError(f"the member rules revise {label}: {rule.name.value} without end")
    return decisions


#: The changes after which a member whose rules still change a decision is an internal error.
ROUNDS = 1000
