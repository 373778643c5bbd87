"""The findings a sync reports of its decisions: notes about placed blocks, conflicts, and
copies whose upstream method vanished.

Each finding is read off a decision's fields (the engine and its report steps decided and
said everything); nothing here decides or checks again. ``splice`` asks for them while it
assembles the module, and moves each to its line in the output once that is known.
"""

from __future__ import annotations

import difflib

from omni_port.model import BlockKind, Code, Copy, Finding, ModulePatches, Severity, Upstream
from omni_port.report import candidate_place, shorten
from omni_port.sync.context import Decision


def notes(
    module: ModulePatches, decision: Decision, upstream: Upstream, start: int
) -> list[Finding]:
    """The notes about a decided block (none for a conflict), at upstream lines: its slot's,
    or ``start``, its member's first line, for those that have none."""
    if decision.conflict:
        return []
    found: list[Finding] = []
    if decision.release:
        found.append(_history(module, decision, upstream))
    if decision.review is not None:
        found.append(_review(module, decision, upstream))
    if decision.dispute is not None:
        found.append(_counterpart(module, decision, upstream))
    if decision.carried:
        found.append(_carried(module, decision, upstream, start))
    if decision.skips:
        found.append(_skips(module, decision, upstream, start))
    resolution = decision.block.anchor.resolution
    if resolution is not None and resolution.dropped:
        message = f"{module.name}: {decision.block.id}: {decision.reason}"
        found.append(Finding(Code.OP312, upstream.label, start, message, severity=Severity.NOTE))
    if decision.breaks_location:
        found.append(_location(module, decision, upstream))
    return found


def conflict(module: ModulePatches, decision: Decision, upstream: Upstream, line: int) -> Finding:
    """OP301 at the conflict region's first line in the output module; the candidates are
    upstream lines of ``upstream``, ranked as `omni-port resolve --at #K` counts them."""
    candidates = (
        "; ".join(
            f"#{n} {candidate_place(s.slot.line(), s.slot.span)} ({s.score:.2f})"
            for n, s in enumerate(decision.candidates, start=1)
        )
        or "none"
    )
    return Finding(
        Code.OP301,
        module.name,
        line,
        f"block {decision.block.id}: {decision.reason}; candidates in {upstream.label}: "
        f"{candidates}",
    )


def vanished(module: ModulePatches, copy: Copy, blocks: int, upstream: Upstream) -> Finding:
    """OP302 for a copy (with ``blocks`` blocks) whose upstream method is gone, at line 1
    until its line in the output is known."""
    where = f"{copy.upstream_owner}.{copy.upstream_name}".lstrip(".")
    return Finding(
        Code.OP302,
        module.name,
        1,
        f"{where} no longer exists in {upstream.label}; the copy {copy.id} and its "
        f"{blocks} blocks are left commented out",
    )


def _line(decision: Decision) -> int:
    return decision.slot.line() if decision.slot is not None else 0


def _history(module: ModulePatches, decision: Decision, upstream: Upstream) -> Finding:
    """A note for an edit upstream history explains: a lag, drift, or a merge against an
    older release (every part of it upstream changed since is such a lag too)."""
    code = Code.OP306 if decision.lag is not None else Code.OP307
    message = f"{module.name}: edit {decision.block.id}: {decision.reason}"
    return Finding(code, upstream.path, _line(decision), message, severity=Severity.NOTE)


def _review(module: ModulePatches, decision: Decision, upstream: Upstream) -> Finding:
    """A note for omni's code winning over upstream's edit of the statements it replaces:
    the edit, as a diff, is the maintainer's to review."""
    review = decision.review
    assert review is not None
    changed = shorten(" ".join(review.after.split()), 80) or "nothing"
    deletion = decision.block.kind is BlockKind.DELETION
    what, verb = ("deletion", "deletes") if deletion else ("code", "replaces")
    by = f" in {review.by}" if review.by else ""
    message = (
        f"{module.name}: {decision.block.id}: omni's {what} wins over upstream's edit{by} of "
        f"the statements it {verb} (upstream now has `{changed}`): review upstream's change"
    )
    if not review.before:
        message = (
            f"{module.name}: {decision.block.id}: omni's block stands for upstream's similar "
            f"`{changed}` beside it: review upstream's version"
        )
    diff = "".join(
        difflib.unified_diff(
            review.before.splitlines(keepends=True),
            review.after.splitlines(keepends=True),
            module.base or "base",
            upstream.label,
        )
    )
    line = _line(decision)
    return Finding(Code.OP309, upstream.path, line, message, detail=diff, severity=Severity.NOTE)


def _counterpart(module: ModulePatches, decision: Decision, upstream: Upstream) -> Finding:
    """A note for a block placed as the NPU runner has it, where omni's GPU runner has it
    elsewhere and upstream code between reads what it binds: one of the two runners may
    compute that code with the wrong value (the next upgrade makes it a conflict)."""
    message = (
        f"{module.name}: block {decision.block.id} is placed as the NPU runner has it, but "
        f"{decision.dispute.why if decision.dispute else ''}: check which runner is right"
    )
    return Finding(Code.OP308, upstream.path, _line(decision), message, severity=Severity.NOTE)


def _carried(module: ModulePatches, decision: Decision, upstream: Upstream, start: int) -> Finding:
    """A note for a block that keeps the base's bindings upstream took out of the member."""
    message = (
        f"{module.name}: {decision.block.id}: {decision.carried}: review whether it still needs it"
    )
    line = decision.slot.line() if decision.slot is not None else start
    return Finding(Code.OP313, upstream.path, line, message, severity=Severity.NOTE)


def _skips(module: ModulePatches, decision: Decision, upstream: Upstream, start: int) -> Finding:
    """A note for upstream exits the output follows that skip omni's code at the others."""
    message = f"{module.name}: {decision.block.id}: {decision.skips}: review whether it needs it"
    line = decision.slot.line() if decision.slot is not None else start
    return Finding(Code.OP314, upstream.path, line, message, severity=Severity.NOTE)


def _location(module: ModulePatches, decision: Decision, upstream: Upstream) -> Finding:
    """A block placed where the catalog's Location line says it does not go."""
    message = (
        f"{module.name}: block {decision.block.id} is placed where its catalog Location "
        f"does not put it ({decision.breaks_location})"
    )
    return Finding(Code.OP409, upstream.path, _line(decision), message)
