"""The placement rules, one module per kind of evidence, and their precedence.

A rule module is named after the ``decided_by`` value the engine stamps for it
(``upstream_history`` for ``upstream-history``, ``Rule.UPSTREAM_HISTORY``), names no other
rule and imports none: what several rules read is a fact (``sync.facts``), worked out once
per sync, or evidence (``sync.evidence``). ``RULES`` is every rule, in the order the engine
(``sync.locate``) asks them each question (see ``sync.rule``): ``BLOCK_RULES``, which answer
the questions about one block, then ``MEMBER_RULES``, which revise a member's decisions
once every block is decided and settled, then ``MODULE_RULES``, which revise the decisions
of every member of a module together. Where two rules could answer, the earlier one does.

``BLOCK_RULES``, and why in that order:

1. ``resolved``: a maintainer's recorded choice wins over any evidence.
2. ``upstream-history``: an unmarked edit whose text an upstream release holds at its
   place is upstream's code, not omni's: the output follows the new upstream there.
3. ``catalog``: the maintainers' ``Location:`` line rules out places before anything
   picks among them.
4. ``convergent``: upstream made omni's change (added the block's code at its place, or
   took out what it deletes): nothing to carry, and code like the block's next to it is a
   conflict.
5. ``order``: blocks of one member keep their order and never share statements, settled
   before moved statements take upstream's edits (``merge3``).
6. ``merge3``: both sides edited one statement: the edits merge, or it is a conflict;
   then ``intent``: where they do not merge, a marked block (or a deletion no release
   explains) is omni's, and omni's code wins, with upstream's change left for review.
7. ``dataflow``, then ``counterpart``, then ``layout``: decide between two places of one
   body with new upstream code between them (data flow also seconds a weak best place
   and checks every chosen place against the new code next to it). ``anchor`` sits among
   them for its own check: a place beside a neighbour the old body repeated, which the
   new body has fewer of, is a conflict after data flow's verdict and before the
   counterpart's dispute.

Three steps are the engine's own, not questions (each would have one answerer): the
anchor's ranking of the candidates every rule works on (a place it finds clear is taken
unless a check above says otherwise; ``anchor``), the older release an edit was written
against (``upstream-history``), and, where nothing above decided, the walk release by
release through upstream history, which only seconds the anchor's own best place
(``stepwise``).

``MODULE_RULES`` are asked once every copied member of a module is decided and revised,
with the decisions of all of them (``revise_module``), again until none changes one; a
member whose decisions one changed is revised by the member rules again in between.

``MEMBER_RULES`` are asked after ``settle``, again from the first after any of them changes
a decision, until none does: an earlier one always judges the decisions a later one
changed before the later ones act again. Their order is the order in which the engine ran
them as steps of its own before they were rules, and why is said per entry.
"""

from __future__ import annotations

from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import (
    anchor,
    carried_binding,
    catalog,
    convergent,
    counterpart,
    coupled,
    dataflow,
    early_exit,
    followed_across,
    followed_whole,
    intent,
    layout,
    merge3,
    order,
    overlap,
    resolved,
    run_once,
    unread_lag,
    upstream_history,
)

BLOCK_RULES: tuple[PlacementRule, ...] = (
    resolved.RULE,
    upstream_history.RULE,
    catalog.RULE,
    convergent.RULE,
    order.RULE,
    merge3.RULE,
    intent.RULE,
    dataflow.RULE,
    anchor.RULE,
    counterpart.RULE,
    layout.RULE,
)

MEMBER_RULES: tuple[PlacementRule, ...] = (
    # First: a lag nothing reads is no part of an upstream change to follow whole; it stays
    # out relying on the blocks that took its readers out (a conflict with them, coupled).
    unread_lag.RULE,
    # Then: which upstream changes are split is judged on the decisions as the block rules
    # made them; each later rule only turns placed edits into conflicts, or follows one.
    followed_whole.RULE,
    # Before carrying and coupling: a block that would run a call twice is a conflict (or
    # upstream's own copy, followed) before any block is judged by what it holds with.
    run_once.RULE,
    # After run-once, before coupling: an upstream exit followed where omni changed every
    # other exit is judged on the edits as they stand; a followed edit it makes a conflict
    # takes the blocks that hold with it along (coupled).
    early_exit.RULE,
    # Before coupled: a block that lost a binding of the base's carries it where it can,
    # so that only a binding nothing can carry makes it a conflict.
    carried_binding.RULE,
    # A block that holds only with one that ended a conflict ends one too; a conflict
    # leaves upstream's statements it replaced in, so run-once judges again after it.
    coupled.RULE,
    # Last: which of two overlapping blocks holds is judged on the blocks that stand; an
    # edit whose conflict came from run-once or coupled no longer claims the statements.
    overlap.RULE,
)

MODULE_RULES: tuple[PlacementRule, ...] = (
    # An upstream change is followed whole across the module's copied methods; a member
    # whose decisions it changes is revised again by the member rules.
    followed_across.RULE,
)

#: Every rule, in the order the engine asks them: the block rules, the member rules, then
#: the module rules.
RULES: tuple[PlacementRule, ...] = (*BLOCK_RULES, *MEMBER_RULES, *MODULE_RULES)
