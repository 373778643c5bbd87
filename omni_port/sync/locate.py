"""Decide where each block of a copied member goes in the new upstream method.

Each kind of evidence is a rule of its own in ``omni_port.sync.rules``; this module asks
them in a fixed order and records which ones decided (``Decision.rules``):

1. ``resolved``: a maintainer's recorded choice wins.
2. ``upstream-history``: an unmarked edit whose text an upstream release holds at its
   place is upstream's code, not omni's; the output follows the new upstream there.
3. ``anchor``: every place is scored against the block's anchor; the best one must score
   at least ``ACCEPT`` and lead the runner-up clearly.
4. ``convergent``: upstream changed the statements a block replaced into the block's own
   code, or already has the block's statements at its place; nothing is left to carry.
5. ``merge3``: upstream changed the statements a block replaced (or a signature, or a
   header): both edits merge on the syntax tree, or it is a conflict.
6. ``catalog``: the maintainers' ``Location:`` line rules out places.
7. ``dataflow``, then ``counterpart``, then ``layout``: decide between two places of one
   body with new upstream code between them; data flow also checks every chosen place
   against the new code next to it, and a contradiction is a conflict.
   ``counterpart``: omni's GPU runner has the same code. Where it sits at a weak or tied
   candidate, the two records agree and the place is taken; where it sits elsewhere,
   with upstream code between that reads what the block binds, the block is a conflict
   (only at an upgrade: onto its own base a sync reproduces the runner).
8. ``order``: an ambiguous block takes the only good place that keeps the member's order.

Where the anchor alone is unsure (a weak best place, or a tie nothing above settles),
``dataflow`` may second a weak best place of an insertion (the new code between it
and the runner-up points at it), and ``stepwise`` follows the block release by release
through upstream history: every step must be clear, the place it reaches must be the
anchor's own best one (the walk seconds, it never picks), and it goes through the same
checks (merge, convergence, data flow, counterpart) as any other.

Nothing here guesses: every doubt about a place is a conflict, with its candidates ranked.
Weak history evidence nothing corroborates (a release lacked code omni's copy lacks too)
does not move an edit: it is carried as it reads against the base, with a note (OP306).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from omni_port.model import Anchor, Block, BlockKind, Edge, Resolution, Rule
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import (
    Stmt,
    Tree,
    dedent_code,
    full_key,
    header_end,
    split_full_key,
    walk,
)
from omni_port.sync.rules import (
    catalog,
    convergent,
    counterpart,
    dataflow,
    history,
    layout,
    merge3,
    moves,
    stepwise,
)
from omni_port.sync.rules.anchor import (
    ACCEPT,
    FUZZY,
    PATH_CERTAIN,
    Index,
    Scored,
    Slot,
    clear_winner,
    distinct,
    index_of,
    ranked,
    replaced_score,
    resolved_slot,
    score_all,
)

#: Least score of a place the catalog's Location line singles out among the candidates.
CATALOG_ACCEPT = 0.5

__all__ = ["ACCEPT", "Decision", "Evidence", "Scored", "Slot", "decide", "resolution_at"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the engine knows about a member besides its new upstream code."""

    #: The new upstream module, for the text of its statements (merges, layout).
    tree: Tree | None = None
    #: The member in upstream history, for the upstream-history rule.
    history: history.MemberHistory | None = None
    #: Catalog constraints, by block id.
    constraints: Mapping[str, catalog.Constraint] = field(default_factory=dict)
    #: The release the module's copies are shown to date from (``history.copy_release``
    #: over the whole module): what weak history evidence is checked against.
    copied_from: str = ""
    #: The new upstream is not the base the patches were extracted against. Onto that
    #: base, a sync reproduces the runner as it is: a disagreement between omni's records
    #: that no upstream change brought is left to the next upgrade to raise.
    upgrade: bool = True


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
    #: For a lag (the edit is an older release's code): the release that changed it.
    lag: str = ""
    #: Weak history evidence nothing corroborates: the edit may be upstream code the copy
    #: never had rather than omni's. The edit is carried as omni's, and this says so.
    doubt: str = ""
    #: Onto the patches' own base: omni's GPU runner has the block elsewhere, with upstream
    #: code between that reads what it binds. The runner is reproduced; this says why to look.
    disputed: str = ""


def decide(
    method: Stmt, blocks: Sequence[Block], evidence: Evidence | None = None
) -> list[Decision]:
    """A decision for every block of one copied member, in block order."""
    evidence = evidence or Evidence()
    index = index_of(method)
    decisions = [_decide(method, index, block, evidence) for block in blocks]
    decisions = _coupled(method, index, decisions, evidence)
    return _moves(method, _resolve_overlaps(_settle_by_order(decisions)), evidence)


def _conflict(
    block: Block, best: Scored | None, candidates: Sequence[Scored], reason: str
) -> Decision:
    slot, score = (best.slot, best.score) if best is not None else (None, 0.0)
    return Decision(block, slot, score, True, tuple(candidates), reason)


def _decide(method: Stmt, index: Index, block: Block, evidence: Evidence) -> Decision:
    resolved = resolved_slot(index, block)
    if resolved is not None:
        here = Scored(resolved, 1.0, 1.0)
        return Decision(block, resolved, 1.0, False, (here,), "resolved", (Rule.RESOLVED,))
    doubt = ""
    if not block.marked and evidence.history is not None:
        explained = _explained(method, index, block, evidence)
        if isinstance(explained, Decision):
            return explained
        doubt = explained or ""
    scored = ranked(index, block)
    top = tuple(distinct(scored))[:3]
    if not top:
        return _conflict(block, None, (), "no place in the new method resembles the anchor")
    decision = _placed(method, index, block, evidence, scored, top)
    if doubt and not decision.conflict and not decision.doubt:
        return replace(decision, doubt=doubt)
    return decision


def _placed(
    method: Stmt,
    index: Index,
    block: Block,
    evidence: Evidence,
    scored: list[Scored],
    top: tuple[Scored, ...],
) -> Decision:
    """The decision from the anchor's candidates and the evidence beyond it."""
    exact = [s for s in distinct(scored) if block.anchor.replaced and s.replaced == 1.0]
    if len(exact) > 1 and all(s.parts[1] < PATH_CERTAIN for s in exact):
        # Upstream now has the replaced code in several bodies and none is the old one:
        # the block may belong at each, which is the maintainer's call.
        lines = ", ".join(str(s.slot.line()) for s in exact)
        reason = f"the statements it replaced occur at upstream lines {lines}, none in its old body"
        return _conflict(block, exact[0], exact[:3], reason)
    narrowed = catalog.ranked(evidence.constraints.get(block.id), top, method)
    # The catalog decides when it takes away the place the anchor preferred, or the
    # runner-up that kept the anchor's choice from being clear.
    by_catalog = narrowed[0] is not top[0] or (
        len(top) > 1 and not clear_winner(top[0], top[1]) and _clear(narrowed)
    )
    top = narrowed
    best = top[0]
    # Among places the anchor found plausible, the maintainers' words may pick one.
    floor = CATALOG_ACCEPT if by_catalog else ACCEPT
    if best.score < floor:
        seconded = _seconded(method, block, top)
        if seconded is not None:
            reason = (
                f"best place scores {best.score:.2f}, and omni's GPU runner has the same code there"
            )
            rules = (Rule.ANCHOR, Rule.COUNTERPART)
            return _accepted(method, block, seconded, top, evidence, rules, reason)
        flowed = _flow_seconded(method, block, top, evidence)
        if flowed is not None:
            return flowed
        reason = f"best place scores {best.score:.2f}"
        if block.anchor.replaced and best.replaced < 1.0:
            reason = f"the statements it replaced changed upstream; {reason}"
        return _walked(method, block, top, evidence) or _conflict(block, best, top, reason)
    return _on_base(method, block, best, top, evidence, _clear(top), by_catalog)


def _on_base(
    method: Stmt,
    block: Block,
    best: Scored,
    top: tuple[Scored, ...],
    evidence: Evidence,
    clear: bool,
    by_catalog: bool = False,
    around: Anchor | None = None,
) -> Decision:
    """The decision at ``best`` once history says which release the edit was written
    against (weak evidence nothing corroborates leaves it on the base, with a doubt)."""
    rebase = None
    if evidence.history is not None and block.anchor.replaced:
        rebase = history.merge_base(block, evidence.history)
        weak = rebase is not None and rebase.weak
        if weak and rebase is not None and not _corroborated(rebase.label, evidence):
            doubt = _weak_reason(block, rebase.label)
            decision = _placed_on_base(
                method, block, best, top, evidence, clear, None, by_catalog, around
            )
            return replace(decision, doubt=doubt) if not decision.conflict else decision
    return _placed_on_base(method, block, best, top, evidence, clear, rebase, by_catalog, around)


def _placed_on_base(
    method: Stmt,
    block: Block,
    best: Scored,
    top: tuple[Scored, ...],
    evidence: Evidence,
    clear: bool,
    rebase: history.Rebase | None = None,
    by_catalog: bool = False,
    around: Anchor | None = None,
) -> Decision:
    """The decision once the release the edit was written against is known (``rebase``;
    None: the base). ``around``: the anchor the place was found by, when not the block's."""
    if block.anchor.replaced and (best.replaced < 1.0 or rebase is not None):
        if not clear:
            reason = "the statements it replaced changed upstream, and two places score alike"
            return _walked(method, block, top, evidence) or _conflict(block, best, top, reason)
        return _changed(method, block, best, top, evidence, rebase, around)
    if not clear:
        return _tie(method, block, top, evidence)
    if by_catalog:
        reason = f"the catalog says where it goes: {evidence.constraints[block.id].text}"
        return _accepted(method, block, best, top, evidence, (Rule.ANCHOR, Rule.CATALOG), reason)
    return _accepted(method, block, best, top, evidence, (Rule.ANCHOR,), around=around)


def _walked(
    method: Stmt, block: Block, top: tuple[Scored, ...], evidence: Evidence
) -> Decision | None:
    """The anchor's best place (``top[0]``) when the stepwise rule, following the block
    through upstream history, reaches it too; None when the walk finds no clear place,
    another one, or nothing fits there."""
    if evidence.history is None or not top:
        return None
    walked = stepwise.walk(block, evidence.history)
    if walked is None:
        return None
    slot = walked.scored.slot
    # The walk only seconds the anchor's own best place: one step's choice becomes the
    # next step's anchor, so a walk alone can drift (fuzzing found it taking a tie's
    # runner-up after upstream moved a statement across the block in a later release).
    best = top[0]
    if best.slot.key() != slot.key() or best.score < CATALOG_ACCEPT or best.contradicted:
        return None
    # Whether upstream changed what the block replaced is judged against the base.
    found = slot.suite.stmts[slot.index : slot.index + slot.span]
    same = replaced_score(block.anchor.replaced, found) if block.anchor.replaced else 1.0
    chosen = Scored(slot, walked.scored.score, same, walked.scored.parts)
    ranked = (chosen, *(s for s in top if s.slot.key() != slot.key()))[:3]
    decision = _on_base(method, block, chosen, ranked, evidence, True, around=walked.anchor)
    if decision.conflict:
        return None
    rules = tuple(Rule.STEPWISE if r is Rule.ANCHOR else r for r in decision.rules)
    rules = rules if Rule.STEPWISE in rules else (Rule.STEPWISE, *rules)
    steps = ", ".join(walked.via) or "every release on the way"
    why = f"followed step by step through {steps}"
    reason = f"{why}; {decision.reason}" if decision.reason else why
    return replace(decision, rules=rules, reason=reason)


def _clear(top: Sequence[Scored]) -> bool:
    return len(top) == 1 or clear_winner(top[0], top[1])


# --- upstream history -----------------------------------------------------------------------


def _explained(
    method: Stmt, index: Index, block: Block, evidence: Evidence
) -> Decision | str | None:
    """An unmarked edit upstream history explains: the output follows the new upstream.

    A doubt instead when the only evidence is weak and nothing corroborates it: history
    cannot tell omni's choice from upstream code the copy never had. The edit is then
    carried as what it reads as against the base, omni's, with a note (OP306) saying so.
    """
    assert evidence.history is not None
    found = history.explain(block, evidence.history)
    if found is None:
        return None
    if found.weak and not history.corroborated(
        evidence.history, found.release, evidence.copied_from
    ):
        return _weak_reason(block, found.release)
    # When the new upstream has nothing at the place, following it leaves nothing there.
    slot = _followed_slot(index, block, found.target_span) or Slot(method.clauses[0], (), 0, 0)
    here = (Scored(slot, 1.0, 1.0),)
    target = evidence.history.versions[evidence.history.target].label
    if found.release == target:
        return Decision(
            block, slot, 1.0, False, here, found.reason, (Rule.CONVERGENT,), follow=True
        )
    return Decision(
        block,
        slot,
        1.0,
        False,
        here,
        found.reason,
        (Rule.HISTORY,),
        follow=True,
        release=found.release,
        lag=found.brought_by,
    )


def _weak_reason(block: Block, release: str) -> str:
    """What weak, uncorroborated history evidence leaves open."""
    what = "removed" if not block.code.strip() else "replaced"
    return (
        f"maybe an upstream change the runners never had: {release} had nothing here, so "
        f"omni's copy may predate the code it {what}; nothing else shows the copy that old, "
        f"so it is carried as omni's edit: check that omni {what} it on purpose"
    )


def _corroborated(release: str, evidence: Evidence) -> bool:
    assert evidence.history is not None
    return history.corroborated(evidence.history, release, evidence.copied_from)


def _followed_slot(index: Index, block: Block, span: tuple[str, ...]) -> Slot | None:
    """The place of the new upstream's own statements at a followed edit's place."""
    scored = sorted(
        score_all(index, replace(block, kind=BlockKind.INSERTION)), key=lambda s: -s.score
    )
    if not scored or scored[0].score < ACCEPT:
        return None
    slot = scored[0].slot
    stmts = slot.suite.stmts
    for start in (slot.index, slot.index - len(span)):
        if start >= 0 and tuple(full_key(s) for s in stmts[start : start + len(span)]) == span:
            return Slot(slot.suite, slot.path, start, len(span))
    return Slot(slot.suite, slot.path, slot.index, 0)


# --- replaced statements that changed upstream ----------------------------------------------


def _changed(
    method: Stmt,
    block: Block,
    best: Scored,
    top: tuple[Scored, ...],
    evidence: Evidence,
    rebase: history.Rebase | None = None,
    around: Anchor | None = None,
) -> Decision:
    """A block whose replaced statements upstream changed: convergent, merged, or a conflict.

    With ``rebase`` (a release, and its code at the block's place), the block is an
    unmarked edit that release explains better than the base: it merges against that code.
    """
    slot = best.slot
    changed = "the statements it replaced changed upstream"
    tree = evidence.tree
    if tree is None:
        return _conflict(block, best, top, changed)
    found = slot.suite.stmts[slot.index : slot.index + slot.span]
    theirs = _source(tree, found, header=block.kind is BlockKind.HEADER)
    if block.kind is BlockKind.DELETION and rebase is None:
        return _conflict(block, best, top, "the statements it deleted changed upstream")
    mine = _with_body(block.code) if block.kind is BlockKind.HEADER else block.code
    if convergent.same_code(mine, theirs):
        same = (Rule.ANCHOR, Rule.CONVERGENT)
        return _followed(block, best, top, same, "upstream made the same change")
    base = _base_text(block, evidence) if rebase is None else rebase.text
    if base is None:
        return _conflict(block, best, top, f"{changed} inside compound statements")
    merged = merge3.merge(base, mine, theirs)
    if isinstance(merged, merge3.Clash):
        if rebase is not None:
            changed = f"against {rebase.label}, which explains it better than the base"
        return _conflict(block, best, top, f"{changed}: {merged.reason}")
    code = _without_body(merged.text) if block.kind is BlockKind.HEADER else merged.text
    reason = "merged upstream's edits: " + "; ".join(merged.taken)
    rules: tuple[Rule, ...] = (Rule.ANCHOR, Rule.MERGE3)
    if not merged.taken:
        reason = "upstream's changes are in omni's code already"
        rules = (Rule.ANCHOR, Rule.CONVERGENT)
    if rebase is not None:
        reason = f"written against {rebase.label}, not the base; {reason}"
        rules = (Rule.ANCHOR, Rule.HISTORY, Rule.MERGE3)
    decision = _accepted(method, block, best, top, evidence, rules, reason, around)
    if decision.conflict:
        return decision
    if rebase is None:
        return replace(decision, code=code)
    assert evidence.history is not None
    lag = history.older_than_base(evidence.history, rebase.label)
    base = evidence.history.versions[evidence.history.base].label
    return replace(decision, code=code, release=rebase.label, lag=base if lag else "")


def _followed(
    block: Block, chosen: Scored, top: tuple[Scored, ...], rules: tuple[Rule, ...], reason: str
) -> Decision:
    return Decision(block, chosen.slot, chosen.score, False, top, reason, rules, follow=True)


def _source(tree: Tree, stmts: Sequence[Stmt], header: bool = False) -> str:
    """The dedented upstream code of ``stmts`` (a compound header alone with ``header``)."""
    if not stmts:
        return ""
    end = header_end(stmts[-1]) if header else stmts[-1].end
    text = dedent_code(tree.text(stmts[0].start, end))
    return _with_body(text) if header else text


_BODY = "pass  # omni-port: body\n"


def _with_body(header: str) -> str:
    """A compound statement's header made parseable with a stand-in body."""
    first = next((line for line in header.split("\n") if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    return header.rstrip("\n") + "\n" + indent + "    " + _BODY


def _without_body(code: str) -> str:
    lines = code.split("\n")
    kept = [line for line in lines if line.strip() != _BODY.strip()]
    return "\n".join(kept)


def _base_text(block: Block, evidence: Evidence) -> str | None:
    """The code the block replaced, as the old upstream wrote it (None when unknown)."""
    if evidence.history is not None:
        text = history.base_text(block, evidence.history)
        if text is not None:
            return _with_body(text) if block.kind is BlockKind.HEADER else text
    keys = []
    for key in block.anchor.replaced:
        head, digest = split_full_key(key)
        if digest:
            return None
        keys.append(head)
    text = "\n".join(keys)
    return _with_body(text) if block.kind is BlockKind.HEADER else text


# --- signatures -----------------------------------------------------------------------------


def signature(member: Stmt, block: Block, tree: Tree) -> Decision:
    """A signature edit: carried when upstream kept the old signature, merged when both
    changed different parameters, a conflict otherwise."""
    if member.key == block.anchor.replaced[0]:
        return Decision(block, None, 1.0, False, (), "", (Rule.ANCHOR,))
    upstream_now = f"the signature changed upstream; upstream now has: {_short(member.key, 120)}"
    theirs = _with_body(dedent_code(tree.text(member.start, header_end(member))))
    mine = _with_body(block.code)
    if convergent.same_code(mine, theirs):
        return Decision(
            block,
            None,
            1.0,
            False,
            (),
            "upstream made the same change",
            (Rule.CONVERGENT,),
            follow=True,
        )
    base = _def_source(block.anchor.replaced[0])
    merged = merge3.merge(_with_body(base), mine, theirs) if base is not None else None
    if not isinstance(merged, merge3.Merged):
        why = f": {merged.reason}" if isinstance(merged, merge3.Clash) else ""
        return Decision(block, None, 0.0, True, (), upstream_now + why)
    if not merged.taken:
        # Upstream's edits were omni's already (or quoting only): nothing to take.
        reason = "upstream's changes are in omni's signature already"
        return Decision(block, None, 1.0, False, (), reason, (Rule.CONVERGENT,))
    if convergent.same_code(merged.text, theirs):
        # Every change of omni's is upstream's now: nothing of omni's is left to carry.
        reason = "upstream made omni's changes of the signature"
        return Decision(block, None, 1.0, False, (), reason, (Rule.CONVERGENT,), follow=True)
    reason = "merged upstream's edits: " + "; ".join(merged.taken)
    return Decision(
        block, None, 1.0, False, (), reason, (Rule.MERGE3,), code=_without_body(merged.text)
    )


def _def_source(key: str) -> str | None:
    """A def header's source from its key (decorators and ``def`` joined by spaces)."""
    depth, quote, cuts = 0, "", []
    for i, char in enumerate(key):
        if quote:
            quote = "" if char == quote and key[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == " " and depth == 0 and re.match(r" (@|def |async def )", key[i:]):
            cuts.append(i)
    parts = [key[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(key)], strict=True)]
    text = "\n".join(parts)
    try:
        ast.parse(text + "\n    ...")
    except SyntaxError:
        return None
    return text


def _parameters(header: str) -> set[str]:
    """Parameter names of a def header (its key joins decorator lines with spaces)."""
    at = re.search(r"(?:^|\s)((?:async\s+)?def\s)", header)
    header = header[at.start(1) :] if at else header
    try:
        node = ast.parse(header + " ...").body[0]
    except SyntaxError:
        return set()
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    args = node.args
    every = [
        *args.posonlyargs,
        *args.args,
        *args.kwonlyargs,
        *(a for a in (args.vararg, args.kwarg) if a),
    ]
    return {a.arg for a in every}


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- accepting a place: convergence and data flow around it ---------------------------------


def _accepted(
    method: Stmt,
    block: Block,
    chosen: Scored,
    top: tuple[Scored, ...],
    evidence: Evidence,
    rules: tuple[Rule, ...],
    reason: str = "",
    around: Anchor | None = None,
) -> Decision:
    """The decision for a chosen place, unless the code around it says otherwise
    (``around``: the anchor the place was found by, when not the block's own)."""
    slot = chosen.slot
    tree = evidence.tree
    if tree is not None and block.kind is BlockKind.INSERTION and block.code.strip():
        there = _already_there(block, slot, tree)
        if there is not None:
            rules = (*rules, Rule.CONVERGENT)
            here = Scored(there, chosen.score, 1.0)
            return _followed(block, here, top, rules, "upstream added the same code there")
    before, after = _new_code_around(block.anchor if around is None else around, slot)
    if tree is not None and block.code.strip():
        echoed = convergent.echo(block.code, [*before, *after], lambda s: _source(tree, [s]))
        if echoed is not None:
            reason = f"upstream added similar code next to its place: `{_short(echoed.key)}`"
            return _conflict(block, chosen, top, reason)
    contradiction = _interference(method, block, slot, before, after, tree)
    if contradiction:
        return _conflict(block, chosen, top, contradiction)
    lost = _fewer_repeats(block.anchor if around is None else around, slot)
    if lost:
        return _conflict(block, chosen, top, lost)
    disputed = counterpart.dispute(method, block, slot)
    if disputed is not None and evidence.upgrade:
        # The two records' places first: one of them is the maintainers' answer.
        theirs = disputed.theirs
        others = [s for s in top if s.slot.key() not in (chosen.slot.key(), theirs.slot.key())]
        return _conflict(block, chosen, (chosen, theirs, *others[:1]), disputed.why)
    why = disputed.why if disputed is not None else ""
    return Decision(block, slot, chosen.score, False, top, reason, rules, disputed=why)


def _fewer_repeats(anchor: Anchor, slot: Slot) -> str:
    """Why a place beside a statement the block's old body repeated is no evidence ("" when
    it is): upstream's body has fewer copies of it now, so which copy went, the one before
    the block or one after it, cannot be told from the text."""
    stmts = slot.suite.stmts
    beside = [*stmts[max(slot.index - 1, 0) : slot.index], *stmts[slot.index + slot.span :][:1]]
    seen = Counter(split_full_key(key)[0] for key in (*anchor.before, *anchor.after))
    for key, count in seen.items():
        if count < 2 or not any(similarity(s.key, key) >= FUZZY for s in beside):
            continue
        now = sum(similarity(s.key, key) >= FUZZY for s in stmts)
        if now < count:
            return (
                f"`{_short(key, 60)}` stood {count} times around it and its body has {now} now: "
                "which of them upstream removed cannot be told"
            )
    return ""


def _already_there(block: Block, slot: Slot, tree: Tree) -> Slot | None:
    """The place of upstream statements equal to the inserted block, right at ``slot``."""
    size = len(convergent.statements(block.code) or [])
    if not size:
        return None
    stmts = slot.suite.stmts
    for start in (slot.index, slot.index - size):
        run = stmts[max(start, 0) : start + size]
        if start >= 0 and len(run) == size and convergent.same_code(block.code, _source(tree, run)):
            return Slot(slot.suite, slot.path, start, size)
    return None


def _new_code_around(anchor: Anchor, slot: Slot) -> tuple[list[Stmt], list[Stmt]]:
    """Upstream statements between the slot and the block's old neighbours: new code.

    Before the slot: back to the nearest old neighbour found (to the body's start when the
    block was first in its body). After it: up to the nearest old neighbour (to the end
    when it was last). Nothing when the old neighbour is not in this body at all.
    """
    stmts = slot.suite.stmts
    # Neighbours that another block replaced are recorded with their bodies' fingerprint.
    old_before = {split_full_key(key)[0] for key in anchor.before}
    old_after = {split_full_key(key)[0] for key in anchor.after}
    earlier = stmts[: slot.index]
    later = stmts[slot.index + slot.span :]
    before: list[Stmt] = []
    cut = next((i for i in range(len(earlier) - 1, -1, -1) if earlier[i].key in old_before), None)
    if cut is not None:
        before = list(earlier[cut + 1 :])
    elif anchor.edge in (Edge.FIRST, Edge.ONLY):
        before = list(earlier)
    after: list[Stmt] = []
    cut = next((i for i, s in enumerate(later) if s.key in old_after), None)
    if cut is not None:
        after = list(later[:cut])
    elif anchor.edge in (Edge.LAST, Edge.ONLY):
        after = list(later)
    return before, after


def _interference(
    method: Stmt,
    block: Block,
    slot: Slot,
    before: Sequence[Stmt],
    after: Sequence[Stmt],
    tree: Tree | None,
) -> str:
    """Why data flow contradicts the chosen place ("" when it does not)."""
    mine = dataflow.flow_of_code(block.code)
    if mine is None or tree is None:
        return ""
    if before:
        start = Slot(slot.suite, slot.path, slot.index - len(before))
        verdict = _verdict(method, mine, before, start, tree)
        if verdict is not None and verdict.side is not dataflow.Side.AFTER:
            return f"new upstream code right before its place: {verdict.why}"
    if after:
        start = Slot(slot.suite, slot.path, slot.index + slot.span)
        verdict = _verdict(method, mine, after, start, tree)
        if verdict is not None and verdict.side is not dataflow.Side.BEFORE:
            return f"new upstream code right after its place: {verdict.why}"
    return ""


def _verdict(
    method: Stmt, mine: dataflow.Flow, new: Sequence[Stmt], start: Slot, tree: Tree
) -> dataflow.Verdict | None:
    try:
        nodes = ast.parse(_source(tree, new)).body
    except SyntaxError:
        return None
    return dataflow.side(mine, dataflow.flow(nodes), bound_before(method, start))


# --- ties -----------------------------------------------------------------------------------


def _tie(method: Stmt, block: Block, top: tuple[Scored, ...], evidence: Evidence) -> Decision:
    """Two places score alike: data flow, then layout, between them decides, or it is a
    conflict."""
    ambiguous = (
        f"ambiguous: places at upstream lines {top[0].slot.line()} and {top[1].slot.line()} "
        f"score {top[0].score:.2f} and {top[1].score:.2f}"
    )
    first, second = sorted(top[:2], key=lambda s: s.slot.index)
    tree = evidence.tree
    same_body = first.slot.suite is second.slot.suite
    if tree is None or not same_body or first.slot.span or second.slot.span:
        return _conflict(block, top[0], top, ambiguous)
    stmts = first.slot.suite.stmts
    between = stmts[first.slot.index : second.slot.index]
    if block.kind is BlockKind.INSERTION and convergent.same_code(
        block.code, _source(tree, between)
    ):
        # Upstream inserted the block's own statements between the two places.
        here = Scored(
            Slot(first.slot.suite, first.slot.path, first.slot.index, len(between)), 1.0, 1.0
        )
        return _followed(block, here, top, (Rule.CONVERGENT,), "upstream added the same code there")
    echoed = convergent.echo(block.code, between, lambda s: _source(tree, [s]))
    if echoed is not None:
        reason = f"upstream added similar code next to its place: `{_short(echoed.key)}`"
        return _conflict(block, top[0], top, reason)
    last = block.anchor.edge is Edge.LAST and second.slot.index == len(stmts)
    if last and merge3.all_fields(block.code) and all(s.kind == "AnnAssign" for s in between):
        # Fields of a class body are positions, like arguments: upstream's new fields at
        # the end keep theirs, and omni's last fields follow them.
        reason = "fields are positions: upstream's new fields first, then omni's"
        return _accepted(method, block, second, top, evidence, (Rule.MERGE3,), reason)
    old = {split_full_key(k)[0] for k in (*block.anchor.before, *block.anchor.after)}
    if any(stmt.key in old for stmt in between):
        # What stands between the two places is the block's own old neighbour, not new
        # code: data flow and layout judge new code, so they have nothing to say here.
        return _conflict(block, top[0], top, ambiguous)
    mine = dataflow.flow_of_code(block.code)
    verdict = _verdict(method, mine, between, first.slot, tree) if mine is not None else None
    if verdict is not None and verdict.side is None:
        return _conflict(
            block, top[0], top, f"{ambiguous}; data flow points both ways: {verdict.why}"
        )
    if verdict is not None and verdict.side is not None:
        chosen = second if verdict.side is dataflow.Side.AFTER else first
        reason = f"data flow puts it {verdict.side.value} the new upstream code: {verdict.why}"
        return _accepted(method, block, chosen, top, evidence, (Rule.DATAFLOW,), reason)
    seconded = _seconded(method, block, (first, second))
    if seconded is not None:
        reason = "omni's GPU runner has the same code at one of the two places"
        return _accepted(method, block, seconded, top, evidence, (Rule.COUNTERPART,), reason)
    before = stmts[first.slot.index - 1] if first.slot.index else None
    after = stmts[second.slot.index] if second.slot.index < len(stmts) else None
    side = layout.side(block.code, before, between, after, tree)
    if side is not None:
        chosen = second if side is dataflow.Side.AFTER else first
        reason = f"the blank lines keep it {side.value} the new upstream code"
        return _accepted(method, block, chosen, top, evidence, (Rule.LAYOUT,), reason)
    return _walked(method, block, top, evidence) or _conflict(block, top[0], top, ambiguous)


def _flow_seconded(
    method: Stmt, block: Block, top: tuple[Scored, ...], evidence: Evidence
) -> Decision | None:
    """The weak best place of an insertion, when data flow through the new code between
    it and the runner-up in the same body points at it: two kinds of evidence agree.
    Data flow only seconds here; it never picks a place the anchor ranked lower."""
    tree = evidence.tree
    mine = dataflow.flow_of_code(block.code)
    if tree is None or mine is None or block.kind is not BlockKind.INSERTION or len(top) < 2:
        return None
    best, rival = top[0], top[1]
    if best.score < CATALOG_ACCEPT or best.contradicted or rival.slot.suite is not best.slot.suite:
        return None
    first, second = sorted((best, rival), key=lambda s: s.slot.index)
    between = first.slot.suite.stmts[first.slot.index : second.slot.index]
    verdict = _verdict(method, mine, between, first.slot, tree) if between else None
    if verdict is None or verdict.side is None:
        return None
    if (second if verdict.side is dataflow.Side.AFTER else first) is not best:
        return None
    reason = (
        f"best place scores {best.score:.2f}, and data flow puts it {verdict.side.value} "
        f"the new upstream code there: {verdict.why}"
    )
    return _accepted(method, block, best, top, evidence, (Rule.ANCHOR, Rule.DATAFLOW), reason)


def _seconded(method: Stmt, block: Block, top: Sequence[Scored]) -> Scored | None:
    """The candidate at the counterpart's place, when it is a weak or tied one of ``top``
    and the block replaces nothing that changed: two records written apart agree there."""
    theirs = counterpart.place(method, block)
    if theirs is None:
        return None
    for scored in top:
        if scored.slot.key() == theirs.slot.key() and scored.replaced == 1.0:
            return scored if scored.score >= CATALOG_ACCEPT else None
    return None


def bound_before(method: Stmt, slot: Slot) -> frozenset[str]:
    """Names bound in ``method`` by its parameters and by statements before ``slot``'s line."""
    names: set[str] = set()
    line = slot.line()
    for _, suite in walk(method.clauses[0]):
        for stmt in suite.stmts:
            if stmt.full_end < line and not stmt.clauses:
                names.update(stmt.writes)
    names.update(_parameters(method.key))
    return frozenset(names)


# --- resolutions, order and overlaps --------------------------------------------------------


def resolution_at(slot: Slot) -> Resolution:
    """The record that puts a block at ``slot`` again on the next sync."""
    stmts = slot.suite.stmts
    after = stmts[slot.index - 1].key if slot.index else ""
    replaces = tuple(full_key(s) for s in stmts[slot.index : slot.index + slot.span])
    return Resolution(after, slot.path, replaces)


def _settle_by_order(decisions: list[Decision]) -> list[Decision]:
    """An ambiguous block takes the best place that keeps the blocks' order, if clear.

    Blocks of one member keep their relative order across an upgrade: a place that would
    put a block before an earlier block (or after a later one) placed in the same body is
    no place for it. Only accepted placements constrain, so nothing is guessed in a chain.
    """
    result = list(decisions)
    for position, decision in enumerate(decisions):
        if not decision.conflict or not decision.reason.startswith("ambiguous"):
            continue
        kept = [c for c in decision.candidates if _keeps_order(c.slot, position, decisions)]
        if len(kept) == len(decision.candidates) or not kept or kept[0].score < ACCEPT:
            continue
        if len(kept) == 1 or clear_winner(kept[0], kept[1]):
            reason = "the best place that keeps the order of the member's blocks"
            chosen = kept[0]
            result[position] = Decision(
                decision.block,
                chosen.slot,
                chosen.score,
                False,
                decision.candidates,
                reason,
                (Rule.ORDER,),
            )
    return result


def _keeps_order(slot: Slot, position: int, decisions: Sequence[Decision]) -> bool:
    for other, decision in enumerate(decisions):
        placed = decision.slot
        if other == position or decision.conflict or placed is None:
            continue
        if placed.suite is not slot.suite:
            continue
        if other < position and slot.index < placed.index + placed.span:
            return False
        if other > position and slot.index > placed.index:
            return False
    return True


def _coupled(
    method: Stmt, index: Index, decisions: list[Decision], evidence: Evidence
) -> list[Decision]:
    """An edit followed as upstream code must leave omni's code working around it.

    Coupled edits (one binds what another reads) stay together. Following the new upstream
    replaces the edit's code with upstream's; that is refused when the edit binds a name
    another block reads and upstream's code there does not bind, or when upstream's code
    reads a name that omni's code no longer binds (its binding is inside statements another
    block replaced). The edit is then placed like any omni edit, without the history rule.
    """
    result = list(decisions)
    alone = replace(evidence, history=None)
    for position, decision in enumerate(decisions):
        if not decision.follow or Rule.HISTORY not in decision.rules or decision.slot is None:
            continue
        why = _needed(decision, decisions, evidence.tree) or _unbound(
            method, decision, decisions, evidence.tree
        )
        if not why:
            continue
        kept = _decide(method, index, decision.block, alone)
        note = f"kept although it is upstream code of {decision.release}: {why}"
        result[position] = replace(kept, reason=f"{note}; {kept.reason}" if kept.reason else note)
    return result


def _needed(decision: Decision, decisions: Sequence[Decision], tree: Tree | None) -> str:
    """Why another block needs the edit's bindings ("" when none does)."""
    assert decision.slot is not None
    mine = dataflow.flow_of_code(decision.block.code)
    if mine is None:
        return ""
    lost = mine.writes - _bound_by(decision.slot, tree)
    for other in decisions:
        flow = dataflow.flow_of_code(other.block.code) if other is not decision else None
        if flow is not None and lost & flow.reads:
            names = ", ".join(f"`{n}`" for n in sorted(lost & flow.reads))
            return f"{other.block.id} reads {names}, which it binds"
    return ""


def _unbound(
    method: Stmt, decision: Decision, decisions: Sequence[Decision], tree: Tree | None
) -> str:
    """Why upstream's code at the edit's place would read names omni's code lost ("")."""
    slot = decision.slot
    assert slot is not None
    stmts = slot.suite.stmts[slot.index : slot.index + slot.span]
    theirs = dataflow.flow_of_code(_source(tree, stmts)) if tree is not None and stmts else None
    mine = dataflow.flow_of_code(decision.block.code)
    if theirs is None or mine is None:
        return ""
    gone: set[int] = set()
    written: set[str] = set()
    for other in decisions:
        if other is decision or other.conflict or other.slot is None or other.follow:
            continue
        flow = dataflow.flow_of_code(other.code or other.block.code)
        written |= flow.writes if flow is not None else frozenset()
        span = other.slot.suite.stmts[other.slot.index : other.slot.index + other.slot.span]
        gone |= {id(s) for s in _nested(span)}
    line = slot.line()
    lost = []
    for name in sorted(theirs.reads - mine.reads - written):
        binders = [
            stmt
            for _, suite in walk(method.clauses[0])
            for stmt in suite.stmts
            if stmt.full_end < line and name in stmt.writes
        ]
        if binders and all(id(b) in gone for b in binders):
            lost.append(name)
    if not lost:
        return ""
    names = ", ".join(f"`{n}`" for n in lost)
    return f"the new upstream's code there reads {names}, which omni's code no longer binds"


def _nested(stmts: Sequence[Stmt]) -> list[Stmt]:
    """``stmts`` and every statement nested in them."""
    found: list[Stmt] = []
    for stmt in stmts:
        found.append(stmt)
        for clause in stmt.clauses:
            found.extend(_nested(clause.stmts))
    return found


def _moves(method: Stmt, decisions: list[Decision], evidence: Evidence) -> list[Decision]:
    """Upstream's edits of statements omni moved into blocks merge into the copies."""
    past = evidence.history
    base = past.versions[past.base] if past is not None else None
    if past is None or base is None or base.member is None or evidence.tree is None:
        return decisions
    removed: list[moves.Original] = []
    for decision in decisions:
        anchor = decision.block.anchor
        if anchor.replaced and decision.block.kind is not BlockKind.HEADER:
            found = history.place(base.member, anchor)
            if found is not None and found.keys() == anchor.replaced:
                removed.extend(moves.nested(found.stmts(), base.tree))
    if not removed:
        return decisions
    target = moves.simple_statements(method, evidence.tree)
    older = [
        (v.label, moves.simple_statements(v.member, v.tree))
        for v in reversed(past.versions[: past.base])
        if v.member is not None
    ]
    result = []
    origins: set[str] = set()
    for decision in decisions:
        kinds = (BlockKind.INSERTION, BlockKind.REPLACEMENT)
        if decision.conflict or decision.follow or decision.block.kind not in kinds:
            result.append(decision)
            continue
        code = decision.code if decision.code is not None else decision.block.code
        moved = moves.merge_moves(code, removed, target, older) if code.strip() else None
        if isinstance(moved, moves.Moved):
            origins.update(moved.origins)
        if moved is None or (isinstance(moved, moves.Moved) and not moved.taken):
            result.append(decision)
        elif isinstance(moved, merge3.Clash):
            result.append(replace(decision, conflict=True, reason=moved.reason, rules=()))
        else:
            rules = tuple(dict.fromkeys((*decision.rules, Rule.MERGE3)))
            if moved.releases:
                rules = tuple(dict.fromkeys((*rules, Rule.HISTORY)))
            merged = "merged upstream's edits: " + "; ".join(moved.taken)
            reason = f"{decision.reason}; {merged}" if decision.reason else merged
            release = decision.release or (moved.releases[0] if moved.releases else "")
            lag = decision.lag
            if moved.releases and history.older_than_base(past, moved.releases[0]):
                lag = lag or base.label
            result.append(
                replace(
                    decision, code=moved.code, rules=rules, reason=reason, release=release, lag=lag
                )
            )
    return [_moved_away(d, origins, base, evidence.tree) for d in result]


def _moved_away(decision: Decision, moved: set[str], base: history.Version, tree: Tree) -> Decision:
    """A deletion whose statements upstream edited is no conflict when every edit went to
    a statement omni moved into a block (the copy received it)."""
    block = decision.block
    if not decision.conflict or block.kind is not BlockKind.DELETION or decision.slot is None:
        return decision
    assert base.member is not None
    found = history.place(base.member, block.anchor)
    if found is None or found.keys() != block.anchor.replaced:
        return decision
    slot = decision.slot
    now = slot.suite.stmts[slot.index : slot.index + slot.span]
    if tuple(full_key(s) for s in now) == found.keys():
        return decision  # upstream left them alone: the conflict is about something else
    headers = (_headers(found.stmts()), _headers(now))
    old = moves.nested(found.stmts(), base.tree)
    verdict = moves.moved_away(old, headers, moves.nested(now, tree), moved)
    if verdict is False:
        return decision
    if verdict is None:
        reason = "upstream only took out statements it deletes too"
        return replace(
            decision, conflict=False, reason=reason, rules=(Rule.ANCHOR, Rule.CONVERGENT)
        )
    reason = "upstream's edits inside it went to statements omni moved, which received them"
    return replace(decision, conflict=False, reason=reason, rules=(Rule.ANCHOR, Rule.MERGE3))


def _headers(stmts: Sequence[Stmt]) -> tuple[str, ...]:
    """Headers of the compound statements in ``stmts``, nested ones included."""
    return tuple(s.key for s in _nested(stmts) if s.clauses)


def _bound_by(slot: Slot, tree: Tree | None) -> frozenset[str]:
    """Names the new upstream's statements at ``slot`` bind."""
    stmts = slot.suite.stmts[slot.index : slot.index + slot.span]
    if tree is None or not stmts:
        return frozenset()
    flow = dataflow.flow_of_code(_source(tree, stmts))
    return flow.writes if flow is not None else frozenset()


def _resolve_overlaps(decisions: list[Decision]) -> list[Decision]:
    """Two blocks may not replace the same upstream statements: the weaker becomes a conflict."""
    claimed: dict[tuple[int, int], Decision] = {}
    result = list(decisions)
    order = sorted(range(len(result)), key=lambda i: -result[i].score)
    for i in order:
        decision = result[i]
        if decision.conflict or decision.slot is None or not decision.slot.span:
            continue
        cells = [
            (id(decision.slot.suite), decision.slot.index + k) for k in range(decision.slot.span)
        ]
        owner = next((claimed[c] for c in cells if c in claimed), None)
        if owner is None:
            claimed.update((c, decision) for c in cells)
            continue
        reason = f"the statements it replaced are already replaced by {owner.block.id}"
        result[i] = Decision(
            decision.block, decision.slot, decision.score, True, decision.candidates, reason
        )
    return result
