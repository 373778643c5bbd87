"""What the placement rules read (a block in its member) and what they answer.

One ``Context`` is one block in its member: the facts of the member worked out once per
sync (``sync.facts``), by provider, and the candidate places the anchor ranked. A rule
answers with a ``Decision`` (final: a place, a followed edit, or a conflict) or a
``Proposal`` (a place the engine still checks with every rule before it takes it). Notes
a decision may carry are typed: ``Lag``, ``Dispute``, ``Review``. A rule never says which
rules decided: the engine stamps every decision with the rules whose answers it rests on
(``rules``).
"""

from __future__ import annotations

from dataclasses import dataclass

from omni_port.model import Anchor, Block, Rule
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.facts import (
    Calls,
    Flows,
    History,
    MemberFacts,
    Places,
    Records,
    Stmt,
    Syntax,
    Tree,
)


@dataclass(frozen=True, slots=True)
class Lag:
    """The edit is an older release's code: the runners lag behind upstream there."""

    #: The release that changed the code after the one the edit holds.
    changed_by: str


@dataclass(frozen=True, slots=True)
class Review:
    """Upstream changed statements omni's code replaces or deletes, and omni's code won:
    what upstream changed, for a maintainer to review."""

    #: The statements as the base had them.
    before: str
    #: The statements as the new upstream has them.
    after: str
    #: The release or commit that first changed them ("" when unknown).
    by: str = ""


@dataclass(frozen=True, slots=True)
class Dispute:
    """Omni's GPU runner has the block elsewhere, with upstream code between that reads
    what the block binds."""

    #: The counterpart's place in the new method.
    theirs: Scored
    #: Why the two places differ in effect, for reports.
    why: str


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a block goes, or why it is a conflict."""

    block: Block
    #: The chosen slot; for a conflict, the best candidate (None when there is none).
    slot: Slot | None
    score: float
    conflict: bool
    #: Best candidates, best first.
    candidates: tuple[Scored, ...]
    reason: str = ""
    #: The rules whose answers decided the place, stamped by the engine in the order it
    #: asked them (for a conflict: the answers that led to it, and the member rule that
    #: made it one if one did; never reported).
    rules: tuple[Rule, ...] = ()
    #: Code to put at the slot instead of the block's own (a merge); None for its own.
    code: str | None = None
    #: The output keeps upstream's statements at the slot: the edit is upstream's already.
    follow: bool = False
    #: The upstream release behind an upstream-history decision (the code was merged
    #: against it, or it holds the edit's text).
    release: str = ""
    #: For an edit that is an older release's code: the release that changed it.
    lag: Lag | None = None
    #: Onto the patches' own base: omni's GPU runner has the block elsewhere, with upstream
    #: code between that reads what it binds. The runner is reproduced; this says why to look.
    dispute: Dispute | None = None
    #: Omni's code won over upstream's edit of what it replaces: upstream's change to review.
    review: Review | None = None
    #: A conflict between two places that score alike (what the order of blocks may decide).
    tied: bool = False
    #: Blocks this decision holds only with (their code, or what they replace, is what
    #: makes this one run): when one of them ends a conflict, so does this one.
    relies_on: tuple[str, ...] = ()
    #: Why the code carries bindings of the base's that upstream took out of the member
    #: (a note for the maintainer; "" when it carries none).
    carried: str = ""
    #: The catalog's Location line the place breaks, stale or not (a finding for the
    #: maintainer: the block or the line is wrong; "" when it keeps it, or has none).
    breaks_location: str = ""
    #: For a followed edit whose own place holds nothing: upstream's statements that stand
    #: for its code elsewhere (its report row names their lines in the output).
    stands: Slot | None = None
    #: Upstream exits the output follows that skip what omni's code does at every other
    #: exit of the method, and what they skip (a note for the maintainer; "" for none).
    skips: str = ""

    @property
    def keeps_upstream(self) -> bool:
        """Whether the output keeps upstream's code at the block's place, following the
        change there: the engine follows it, or a maintainer dropped the edit
        (``resolve --drop``), which follows it too (what rule 5 counts as following)."""
        resolution = self.block.anchor.resolution
        return self.follow or (resolution is not None and resolution.dropped and not self.conflict)


def conflict(
    block: Block, best: Scored | None, candidates: tuple[Scored, ...], reason: str
) -> Decision:
    """A conflict shown at ``best`` (nowhere when None), with its candidates."""
    slot, score = (best.slot, best.score) if best is not None else (None, 0.0)
    return Decision(block, slot, score, True, candidates, reason)


def conflict_at(decision: Decision, reason: str) -> Decision:
    """``decision``'s block as a conflict where the decision put it, with its candidates and
    ``reason``: a member rule's refusal of a decided block."""
    return Decision(
        decision.block, decision.slot, decision.score, True, decision.candidates, reason
    )


def placed(
    block: Block, chosen: Scored, top: tuple[Scored, ...], reason: str, review: Review | None = None
) -> Decision:
    """The block at ``chosen``, as final: the checks of a place are not asked again."""
    return Decision(block, chosen.slot, chosen.score, False, top, reason, review=review)


def followed(block: Block, chosen: Scored, top: tuple[Scored, ...], reason: str) -> Decision:
    """The edit is upstream's own code at ``chosen``: the output keeps upstream's."""
    return Decision(block, chosen.slot, chosen.score, False, top, reason, follow=True)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A place a rule proposes; the engine takes it unless a rule's check says otherwise."""

    chosen: Scored
    reason: str = ""
    #: Code to put there instead of the block's own (a merge), once the place is taken.
    code: str | None = None
    #: The release an upstream-history merge was made against, once the place is taken.
    release: str = ""
    #: For a merge against a release older than the base, once the place is taken.
    lag: Lag | None = None
    #: Upstream's change omni's code won over, once the place is taken.
    review: Review | None = None
    #: The anchor the place's surroundings are judged by, when the rule left statements
    #: of what the block replaced to upstream: they stand beside it as old neighbours.
    around: Anchor | None = None


#: What a rule answers to a question: a final decision, or a place to check and take.
Answer = Decision | Proposal


@dataclass(frozen=True, slots=True)
class Context:
    """One block in its member, with everything the rules may read about it: the member
    and its module, and the providers of facts (``sync.facts``) a rule declares it reads."""

    facts: MemberFacts
    block: Block
    #: The best candidate places, best first, once the anchor has ranked them.
    top: tuple[Scored, ...] = ()
    #: The anchor the places were found by, when not the block's own (a walk through
    #: upstream history re-anchors the block in each release).
    around: Anchor | None = None

    @property
    def member(self) -> Stmt:
        """The member in the new upstream (a method, or a module-level class or function)."""
        return self.facts.member

    @property
    def tree(self) -> Tree:
        """The new upstream module, for the text of its statements."""
        return self.facts.tree

    @property
    def syntax(self) -> Syntax:
        return self.facts.syntax

    @property
    def places(self) -> Places:
        return self.facts.places

    @property
    def flows(self) -> Flows:
        return self.facts.flows

    @property
    def history(self) -> History:
        return self.facts.history

    @property
    def calls(self) -> Calls:
        return self.facts.calls

    @property
    def records(self) -> Records:
        return self.facts.records


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The candidates a rule leaves, and whether that decides between them."""

    top: tuple[Scored, ...]
    #: The rule took away the anchor's best place, or the runner-up that kept it unclear:
    #: its best is taken on less of a score, for the reason given.
    decisive: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Tie:
    """Two places of one body that score alike, with the upstream code between them."""

    first: Scored
    second: Scored
    #: Upstream's statements between the two places.
    between: tuple[Stmt, ...]
    #: The conflict's reason when nothing decides.
    ambiguous: str

    def undecided(self, block: Block, top: tuple[Scored, ...], why: str = "") -> Decision:
        """The conflict between the two places: nothing decides (``why``, when something
        was found that points both ways)."""
        reason = f"{self.ambiguous}; {why}" if why else self.ambiguous
        found = conflict(block, top[0], top, reason)
        return Decision(
            found.block, found.slot, found.score, True, found.candidates, reason, tied=True
        )


@dataclass(frozen=True, slots=True)
class Check:
    """A proposed place, with the new upstream code between it and the block's old
    neighbours on each side (what the checks look at)."""

    proposal: Proposal
    before: tuple[Stmt, ...]
    after: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """A settle answer: the decision rests on upstream history's evidence and does not
    hold; the engine decides the block again without that evidence, saying why."""

    #: The decision withdrawn.
    decision: Decision
    #: What the new decision's reason opens with: why the answer was refused.
    note: str


#: What a rule answers when settling a member: each decision (the same object when the
#: rule leaves it alone), or withdrawn.
Settled = Decision | Withdrawn
