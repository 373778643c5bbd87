"""The upgrade summary: what changed upstream near every block, and what a maintainer must do.

A markdown document for a pull request: every block accounted for (placed, and by which
rule, or a conflict with its candidates and the command that resolves it), the upstream
changes around each block, the upstream changes the runners never had (found in the
releases between base and target), upstream's edits of code omni's code won over (for
review), the copied methods upstream changed or removed, and
the new upstream methods the runners may want to override.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from omni_port.catalog.wording import describe_location
from omni_port.model import (
    Block,
    Code,
    Copy,
    Finding,
    ModulePatches,
    PatchSet,
    Placement,
    Rule,
    Severity,
    Status,
    Upstream,
)
from omni_port.pyast.diff import flat_keys
from omni_port.pyast.syntax import find_def, find_member, split_full_key
from omni_port.report import candidate_place, shorten
from omni_port.sync.evidence.places import Scored
from omni_port.sync.facts import ModuleFacts, declared

#: Statements of context on each side of a block when showing upstream changes near it.
NEAR = 3


@dataclass(frozen=True, slots=True)
class Upgrade:
    """Everything the summary is made from."""

    #: The base the patches were extracted against.
    old: Upstream
    #: The upstream synced onto, with the history and members the sync read.
    new: Upstream
    upstream_class: str
    patches: PatchSet
    placements: tuple[Placement, ...]
    findings: tuple[Finding, ...]
    #: The catalog's Location lines by block id, as the sync read them.
    locations: Mapping[str, str] = field(default_factory=dict)
    #: What ``omni-port verify`` finds in the runners (also among ``findings``): the
    #: summary's verification counts these, as the command would.
    verified: tuple[Finding, ...] = ()
    #: Which runners were ported, as the title names them (the platform's title).
    runners: str = "NPU"

    @property
    def old_label(self) -> str:
        return self.old.label

    @property
    def new_label(self) -> str:
        return self.new.label


def summary(upgrade: Upgrade) -> str:
    """The markdown summary."""
    parts = [
        *_heading(upgrade),
        *_conflicts(upgrade),
        *_blocks(upgrade, _windows(upgrade, upgrade.old), _windows(upgrade, upgrade.new)),
        *_lags(upgrade),
        *_reviews(upgrade),
        *_carried(upgrade),
        *_early_exits(upgrade),
        *_methods(upgrade),
        *_new_methods(upgrade),
        *_verification(upgrade),
    ]
    return "\n".join(parts).rstrip("\n") + "\n"


def _heading(upgrade: Upgrade) -> Iterator[str]:
    placements = upgrade.placements
    placed = sum(1 for p in placements if p.status is Status.PLACED)
    followed = sum(1 for p in placements if p.status is Status.FOLLOWED)
    conflicts = sum(1 for p in placements if p.status is Status.CONFLICT)
    carried = sum(1 for p in placements if p.status is Status.CARRIED)
    yield f"# Port the {upgrade.runners} runners from {upgrade.old_label} to {upgrade.new_label}"
    yield ""
    yield (
        f"{placed} edits placed, {followed} followed upstream, {conflicts} conflicts, "
        f"{carried} marked regions carried "
        f"({sum(1 for p in placements if p.marked)} marked blocks, "
        f"{sum(1 for p in placements if not p.marked)} implicit edits)."
    )
    yield ""


def _conflicts(upgrade: Upgrade) -> Iterator[str]:
    conflicts = [p for p in upgrade.placements if p.status is Status.CONFLICT]
    if not conflicts:
        return
    blocks = {block.id: block for block in _all_blocks(upgrade.patches)}
    yield "## Conflicts to resolve"
    yield ""
    for placement in conflicts:
        yield f"- **{placement.block_id}**: {placement.reason}."
        for rank, candidate in enumerate(placement.candidates, start=1):
            text = shorten(candidate.text, 90)
            where = " > ".join(candidate.path) or "method body"
            score = f"score {candidate.score:.2f}"
            place = candidate_place(candidate.line, candidate.span)
            yield f"  - `#{rank}` {place} ({score}), before `{text}` in {where}"
        replaced = blocks.get(placement.block_id)
        if replaced is not None and replaced.anchor.replaced:
            old = shorten(replaced_summary(replaced.anchor.replaced), 160)
            yield f"  - it replaced, in the old base: `{old}`"
        # The target is named: the command must not depend on what the lock says later.
        at = "'#1'" if placement.candidates else "LINE"
        command = f"omni-port resolve {placement.block_id} --at {at} --upstream {upgrade.new_label}"
        if placement.candidates:
            yield f"  - resolve: `{command}` (or the right `#K` or upstream line)"
        else:
            yield (
                f"  - resolve: `{command}` (no candidate works: the line to go before, "
                "`--replacing N` to replace N statements there, then fix its code in place), "
                "or `--drop --why REASON` when the edit is obsolete"
            )
    yield ""


def _blocks(upgrade: Upgrade, old: Windows, new: Windows) -> Iterator[str]:
    yield "## Every block"
    yield ""
    yield "| block | kind | status | decided by | where | upstream changes near it |"
    yield "| --- | --- | --- | --- | --- | --- |"
    status = {p.block_id: p for p in upgrade.placements}
    for block in _all_blocks(upgrade.patches):
        placement = status.get(block.id)
        state = placement.status.value if placement else "missing"
        if placement and placement.start:
            state += f" (lines {placement.start}-{placement.end})"
        marked = "marked" if block.marked else "implicit"
        near = _near_changes(block, old, new)
        where = _cell(describe_location(block.anchor))
        decided = _cell(decided_by(placement)) if placement else ""
        yield (
            f"| {block.id} | {marked} {block.kind.value} | {state} | {decided} | {where} "
            f"| {_cell(near)} |"
        )
    yield ""


def decided_by(placement: Placement) -> str:
    """The rules that decided a placement, the release beside upstream-history."""
    names = []
    for rule in placement.decided_by:
        release = (
            f" ({placement.release})" if rule is Rule.UPSTREAM_HISTORY and placement.release else ""
        )
        names.append(f"{rule.value}{release}")
    return ", ".join(names)


def _lags(upgrade: Upgrade) -> Iterator[str]:
    """Upstream code the runners never had: an edit that is an older release's code,
    which a later release changed (OP306). The new upstream is followed there."""
    yield from _listed(
        upgrade,
        Code.OP306,
        "Upstream changes the runners never had",
        "The runners held an older release's code here; the release named brought the "
        "change, and the output follows the new upstream. Check that omni did not mean to "
        "keep the old code.",
    )


def _reviews(upgrade: Upgrade) -> Iterator[str]:
    """Omni's code won where upstream changed the statements it replaces or deletes
    (OP309): upstream's change, as a diff, for a maintainer to read."""
    yield from _listed(
        upgrade,
        Code.OP309,
        "Review: upstream changed code omni replaces",
        "Omni's code stands here (a marked block, or a deletion no upstream release "
        "explains), and upstream edited the statements it replaces. The runner keeps omni's "
        "code; upstream's change may need to be taken into it.",
    )


def _carried(upgrade: Upgrade) -> Iterator[str]:
    """Bindings of the base's that blocks carry where upstream took them out (OP313)."""
    yield from _listed(
        upgrade,
        Code.OP313,
        "Review: upstream bindings omni's code carries",
        "Upstream took these bindings out of the method, and omni's code reads them. Each is "
        "a plain read of state upstream still reads, so the runner keeps it before the block, "
        "as the old runner had it. Upstream's reason for taking it out may apply to omni's "
        "code too.",
    )


def _early_exits(upgrade: Upgrade) -> Iterator[str]:
    """Upstream exits the output follows that skip omni's code at the other exits (OP314)."""
    yield from _listed(
        upgrade,
        Code.OP314,
        "Review: upstream exits that skip omni's code",
        "The output follows upstream code with an exit (a return or a raise) where omni's "
        "code changed every other exit of its kind in the method. The new exit skips what "
        "omni does there (named below): it may need omni's treatment too.",
    )


def _listed(upgrade: Upgrade, code: Code, heading: str, intro: str) -> Iterator[str]:
    """A section listing the findings of ``code`` (each with its diff, when it has one);
    nothing when there are none."""
    found = [f for f in upgrade.findings if f.code is code]
    if not found:
        return
    yield f"## {heading}"
    yield ""
    yield intro
    yield ""
    for finding in found:
        yield f"- `{finding.path}:{finding.line}` {finding.message}"
        if finding.detail:
            yield ""
            yield "  ```diff"
            yield from (f"  {line}" for line in finding.detail.rstrip("\n").splitlines())
            yield "  ```"
    yield ""


def _all_blocks(patches: PatchSet) -> Iterator[Block]:
    for module in patches.modules:
        for piece in module.pieces:
            if isinstance(piece, Block):
                yield piece


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _near_changes(block: Block, old: Windows, new: Windows) -> str:
    """Upstream statements around the block, old base against new, as +/- lines."""
    if block.id not in old or block.id not in new:
        return "method missing upstream" if block.id not in new else "method new upstream"
    old_window, new_window = old[block.id], new[block.id]
    if old_window == new_window:
        return "unchanged"
    changes = [
        line
        for line in difflib.unified_diff(old_window, new_window, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return "\n".join(f"`{line[0]} {line[1:][:80]}`" for line in changes[:6]) or "reordered"


#: Keys of the upstream statements around each block's place, by block id (a block whose
#: upstream method is missing has none).
Windows = dict[str, list[str]]


def _windows(upgrade: Upgrade, upstream: Upstream) -> Windows:
    """The upstream statements around where every block's anchor points in ``upstream``
    (its best ranked place), read from the same facts as a sync onto it."""
    found: Windows = {}
    owned = declared(upgrade.patches)
    for module in upgrade.patches.modules:
        known = ModuleFacts.build(module, upstream, upgrade.locations, owned)
        for copy, blocks in _copies(module):
            facts = known.member_facts(copy, blocks)
            if facts is not None:
                found.update((b.id, _window(facts.places.ranked(b))) for b in blocks)
    return found


def _copies(module: ModulePatches) -> Iterator[tuple[Copy, list[Block]]]:
    """Each copied member with its blocks (blocks follow their copy in the patches)."""
    current: tuple[Copy, list[Block]] | None = None
    for piece in module.pieces:
        if isinstance(piece, Block) and current is not None:
            current[1].append(piece)
        elif isinstance(piece, Copy):
            if current is not None:
                yield current
            current = (piece, [])
    if current is not None:
        yield current


def _window(ranked: Sequence[Scored]) -> list[str]:
    """Keys of the upstream statements around the best place (none when no place scores
    at least half)."""
    if not ranked or ranked[0].score < 0.5:
        return []
    slot = ranked[0].slot
    stmts = slot.suite.stmts
    low = max(slot.index - NEAR, 0)
    high = min(slot.index + slot.span + NEAR, len(stmts))
    return [s.key for s in stmts[low:high]]


def _methods(upgrade: Upgrade) -> Iterator[str]:
    rows = list(_method_rows(upgrade))
    if not rows:
        return
    yield "## Upstream methods the runners copy"
    yield ""
    yield "| runner member | upstream | change upstream |"
    yield "| --- | --- | --- |"
    yield from rows
    yield ""


def _method_rows(upgrade: Upgrade) -> Iterator[str]:
    for module in upgrade.patches.modules:
        for piece in module.pieces:
            if not isinstance(piece, Copy):
                continue
            owner = upgrade.upstream_class if piece.upstream_owner else ""
            where = f"{owner}.{piece.upstream_name}".lstrip(".")
            runner = f"{module.name} {piece.owner + '.' if piece.owner else ''}{piece.name}"
            change = _method_change(upgrade, owner, piece.upstream_name)
            yield f"| {runner} | {where} | {_cell(change)} |"


def _method_change(upgrade: Upgrade, owner: str, name: str) -> str:
    old = find_member(upgrade.old.tree, owner, name)
    new = find_member(upgrade.new.tree, owner, name)
    if new is None:
        return "**vanished** upstream"
    if old is None:
        return "not in the old base"
    notes = []
    if old.key != new.key:
        notes.append(f"signature now `{new.key[:100]}`")
    old_keys, new_keys = flat_keys(old.clauses[0]), flat_keys(new.clauses[0])
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    added = sum(
        j2 - j1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("insert", "replace")
    )
    removed = sum(
        i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag in ("delete", "replace")
    )
    notes.append(f"+{added} / -{removed} statements" if added or removed else "body unchanged")
    return "; ".join(notes)


def _new_methods(upgrade: Upgrade) -> Iterator[str]:
    old_cls = find_def(upgrade.old.tree.body, upgrade.upstream_class)
    new_cls = find_def(upgrade.new.tree.body, upgrade.upstream_class)
    if old_cls is None or new_cls is None:
        return
    old_names = {m.name for m in old_cls.clauses[0].stmts if m.name}
    added = [m for m in new_cls.clauses[0].stmts if m.name and m.name not in old_names]
    removed = sorted(old_names - {m.name for m in new_cls.clauses[0].stmts if m.name})
    if not added and not removed:
        return
    yield f"## {upgrade.upstream_class} methods added or removed upstream"
    yield ""
    for member in added:
        yield f"- added `{member.name}` (line {member.start}): should the omni runners override it?"
    for name in removed:
        yield f"- removed `{name}`"
    yield ""


def _verification(upgrade: Upgrade) -> Iterator[str]:
    """The problems left, and verify's notes counted by kind as ``omni-port verify`` counts
    them (the sync's own notes are in the sections above or the command's output)."""
    problems = verification_problems(upgrade.findings)
    notes = Counter(f.code for f in upgrade.verified if f.severity is Severity.NOTE)
    yield "## Verification of the generated runners"
    yield ""
    if not problems:
        yield "No problems found by `omni-port verify`."
    for finding in problems:
        yield f"- `{finding.path}:{finding.line}` {finding.code.value} {finding.message}"
    if notes:
        kinds = ", ".join(f"{n} {code.value} {code.kind}" for code, n in sorted(notes.items()))
        total = sum(notes.values())
        yield f"- {total} note{'s' * (total != 1)} of `omni-port verify`: {kinds}"
    yield ""


def verification_problems(findings: Sequence[Finding]) -> list[Finding]:
    """The errors other than conflicts, each said once: sync (OP303) and verify (OP502)
    both report a name that nothing defines, at the same place; a read a conflict's
    commented-out code would bind is verify's OP507 naming that conflict (every gate sees
    it), not also the sync's OP303."""
    conflicts = (Code.OP301, Code.OP310)
    problems = [f for f in findings if f.severity is Severity.ERROR and f.code not in conflicts]
    unresolved = {(f.path, f.line, f.col) for f in problems if f.code is Code.OP303}
    behind = {
        (f.path, f.line, f.col) for f in problems if f.code is Code.OP507 and f.behind_conflict
    }
    return [
        f
        for f in problems
        if not (f.code is Code.OP502 and (f.path, f.line, f.col) in unresolved)
        and not (f.code is Code.OP303 and (f.path, f.line, f.col) in behind)
    ]


def replaced_summary(keys: Sequence[str]) -> str:
    """The replaced statements of a block, headers only, for one table cell."""
    return "; ".join(split_full_key(key)[0] for key in keys)
