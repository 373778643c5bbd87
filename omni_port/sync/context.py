"""What the placement rules read (a block in its context) and what they answer.

One ``Context`` holds everything a rule may read about one block: the new upstream
member, its places (``Index``), the block, and the evidence worked out for the member
once per run. A rule answers with a ``Decision`` (final: a place, a followed edit, or a
conflict) or a ``Proposal`` (a place the engine still checks with every rule before it
takes it). Notes a decision may carry are typed: ``Lag``, ``Dispute``, ``Review``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from omni_port.model import Anchor, Block, Rule
from omni_port.pyast.syntax import Stmt, Tree
from omni_port.sync.evidence.catalog import Constraint
from omni_port.sync.evidence.history import MemberHistory
from omni_port.sync.evidence.places import Index, Scored, Slot


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the engine knows about a member besides its new upstream code."""

    #: The new upstream module, for the text of its statements (merges, layout).
    tree: Tree | None = None
    #: The member in upstream history, for the upstream-history rule.
    history: MemberHistory | None = None
    #: Catalog constraints, by block id.
    constraints: Mapping[str, Constraint] = field(default_factory=dict)
    #: The new upstream is not the base the patches were extracted against. Onto that
    #: base, a sync reproduces the runner as it is: a disagreement between omni's records
    #: that no upstream change brought is left to the next upgrade to raise.
    upgrade: bool = True


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
    #: The rules that decided the place (empty for a conflict).
    rules: tuple[Rule, ...] = ()
    #: Code to put at the slot instead of the block's own (a merge); None for its own.
    code: str | None = None
    #: The output keeps upstream's statements at the slot: the edit is upstream's already.
    follow: bool = False
    #: The upstream release behind an upstream-history decision.
    release: str = ""
    #: For an edit that is an older release's code: the release that changed it.
    lag: Lag | None = None
    #: Onto the patches' own base: omni's GPU runner has the block elsewhere, with upstream
    #: code between that reads what it binds. The runner is reproduced; this says why to look.
    dispute: Dispute | None = None
    #: Omni's code won over upstream's edit of what it replaces: upstream's change to review.
    review: Review | None = None


def conflict(
    block: Block, best: Scored | None, candidates: tuple[Scored, ...], reason: str
) -> Decision:
    """A conflict shown at ``best`` (nowhere when None), with its candidates."""
    slot, score = (best.slot, best.score) if best is not None else (None, 0.0)
    return Decision(block, slot, score, True, candidates, reason)


def followed(
    block: Block, chosen: Scored, top: tuple[Scored, ...], rules: tuple[Rule, ...], reason: str
) -> Decision:
    """The edit is upstream's own code at ``chosen``: the output keeps upstream's."""
    return Decision(block, chosen.slot, chosen.score, False, top, reason, rules, follow=True)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A place a rule proposes; the engine takes it unless a rule's check says otherwise."""

    chosen: Scored
    rules: tuple[Rule, ...]
    reason: str = ""
    #: Code to put there instead of the block's own (a merge), once the place is taken.
    code: str | None = None
    #: The release an upstream-history merge was made against, once the place is taken.
    release: str = ""
    #: For a merge against a release older than the base, once the place is taken.
    lag: Lag | None = None
    #: Upstream's change omni's code won over, once the place is taken.
    review: Review | None = None


#: What a rule answers to a question: a final decision, or a place to check and take.
Answer = Decision | Proposal


@dataclass(frozen=True, slots=True)
class Context:
    """One block in its member, with everything the rules may read about it."""

    #: The member in the new upstream (a method, or a module-level class or function).
    member: Stmt
    #: Every body of the member and every statement's place in it.
    index: Index
    block: Block
    evidence: Evidence
    #: The best candidate places, best first, once the anchor has ranked them.
    top: tuple[Scored, ...] = ()
    #: The anchor the places were found by, when not the block's own (a walk through
    #: upstream history re-anchors the block in each release).
    around: Anchor | None = None
    #: Takes a proposal the way the engine takes every place (every rule's ``check``).
    accept: Callable[[Context, Proposal], Decision] | None = field(default=None, compare=False)
    #: The decision at a place found another way (``stepwise``): the engine's own path from
    #: a chosen place (history's rebase, merges, checks), as for the anchor's best.
    settle: Callable[[Context, Scored, Anchor], Decision] | None = field(
        default=None, compare=False
    )

    def taken(self, proposal: Proposal) -> Decision:
        """``proposal`` checked by every rule and taken, or the conflict a check found."""
        assert self.accept is not None, "the engine gives every context its accept"
        return self.accept(self, proposal)


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The candidates a rule leaves, and whether that decides between them."""

    top: tuple[Scored, ...]
    #: The rule took away the anchor's best place, or the runner-up that kept it unclear:
    #: its best is taken on less of a score, for the reason given.
    decisive: bool
    #: The rule that narrowed them.
    by: Rule
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


@dataclass(frozen=True, slots=True)
class Check:
    """A proposed place, with the new upstream code between it and the block's old
    neighbours on each side (what the checks look at)."""

    proposal: Proposal
    before: tuple[Stmt, ...]
    after: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Member:
    """Every block of one member decided: what settling them together reads."""

    member: Stmt
    index: Index
    evidence: Evidence
    #: Decides one block again on other evidence (the engine's whole path).
    redecide: Callable[[Block, Evidence], Decision] = field(compare=False)
