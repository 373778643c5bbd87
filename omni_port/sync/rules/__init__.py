"""The placement rules, one module per kind of evidence, and their precedence.

``RULES`` is the order in which the engine (``sync.locate``) asks them each question (see
``sync.rule``): where two rules could answer, the earlier one does. A rule module is
named after the ``decided_by`` value the engine stamps for it (``upstream_history`` for
``upstream-history``, ``Rule.UPSTREAM_HISTORY``), names no other rule and imports none:
what several rules read is a fact (``sync.facts``), worked out once per sync.

The order, and why:

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
"""

from __future__ import annotations

from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import (
    anchor,
    catalog,
    convergent,
    counterpart,
    dataflow,
    intent,
    layout,
    merge3,
    order,
    resolved,
    upstream_history,
)

RULES: tuple[PlacementRule, ...] = (
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
