"""Build a generated runner module: omni code verbatim, upstream copies with blocks spliced in.

The module is assembled as a list of tagged text segments (a tag is the id of the piece
or block a segment came from), so every block's output line range is known at the end.
Copies are cut from the new upstream by line ranges and re-indented only; blocks keep
their own bytes. A conflict is never dropped: it lands at its best candidate as a
commented region that still parses (its format: ``model.CONFLICT_*``).

Nothing here decides or checks: the decisions come from ``sync.decisions``, the findings
they make from ``sync.findings``; splice writes the text and moves each finding to its
line in the output.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from omni_port.model import (
    CONFLICT_CANDIDATE,
    CONFLICT_CLOSE,
    CONFLICT_LINE,
    CONFLICT_OPEN,
    CONFLICT_VANISHED,
    Block,
    BlockKind,
    Candidate,
    Chunk,
    ClassHeader,
    Copy,
    Finding,
    ModulePatches,
    Piece,
    Placement,
    RegionKind,
    Status,
    Stmt,
    Tree,
    Upstream,
)
from omni_port.pyast.syntax import header_end, reindent
from omni_port.report import candidate_place, shorten
from omni_port.sync import findings, imports, locate
from omni_port.sync.decisions import Copied, Decided, grouped
from omni_port.sync.facts import MemberFacts


@dataclass(frozen=True, slots=True)
class Built:
    """One generated module and what happened to each of its blocks."""

    name: str
    text: str
    placements: tuple[Placement, ...]
    findings: tuple[Finding, ...]


@dataclass(slots=True)
class _Segment:
    text: str
    #: Id of the piece or block the text came from ("" for glue).
    tag: str = ""


@dataclass(slots=True)
class _Assembly:
    """Segments of the module being built, and the decisions taken on the way."""

    segments: list[_Segment] = field(default_factory=list)
    decisions: list[tuple[str, locate.Decision, Copy]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    carried: list[Piece] = field(default_factory=list)
    #: Decisions that are conflicts, reported once the output lines are known.
    conflicts: list[locate.Decision] = field(default_factory=list)
    #: Copies whose upstream method vanished, with their finding (line known at the end).
    vanished: list[tuple[Copy, Finding]] = field(default_factory=list)
    #: Notes about placed blocks, by block id: reported at the block's lines in the output.
    notes: list[tuple[str, Finding]] = field(default_factory=list)


def assemble(decided: Decided, header: str) -> Built:
    """The module text of ``decided``, opening with ``header``, and what became of each
    block and piece."""
    module, upstream = decided.module, decided.upstream
    assembly = _Assembly([_Segment(header, "header")])
    class_indent = ""
    for piece, blocks in grouped(module.pieces):
        if isinstance(piece, ClassHeader):
            class_indent = piece.body_indent
        if isinstance(piece, Copy):
            indent = class_indent if piece.owner else ""
            job = _Copying(module, piece, blocks, upstream, indent)
            _add_copy(assembly, job, decided.copies[piece.id])
        elif isinstance(piece, Chunk | ClassHeader):
            assembly.segments.append(_Segment(piece.code, piece.id))
            if isinstance(piece, Chunk):
                assembly.carried.append(piece)
    assembly.findings.extend(imports.settle(assembly.segments, module, upstream))
    text = assembly_text(assembly.segments)
    ranges = _line_ranges(assembly.segments)
    # A conflict is reported where it sits in the output, a line an editor can open.
    for decision in assembly.conflicts:
        line = ranges.get(decision.block.id, (1, 1))[0]
        assembly.findings.append(findings.conflict(module, decision, upstream, line))
    for copy, finding in assembly.vanished:
        line = ranges.get(copy.id, (1, 1))[0] + copy.leading.count("\n")
        assembly.findings.append(replace(finding, line=line))
    # A note names the block's lines in the output, or, for an edit that follows upstream
    # and so has none (upstream deleted what it held), the output line where it stood.
    points = _points(assembly.segments)
    for ident, finding in assembly.notes:
        if ident in points:
            finding = replace(finding, path=module.name, line=points[ident])
        assembly.findings.append(finding)
    placements = [
        *_carried_rows(module, assembly.carried, ranges),
        *_decision_rows(module, assembly, ranges, _Standing(upstream.tree, text, points)),
    ]
    return Built(module.name, text, tuple(placements), tuple(assembly.findings))


def assembly_text(segments: Sequence[_Segment]) -> str:
    return "".join(segment.text for segment in segments)


# --- copies ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Edit:
    """Text to put before upstream line ``at``, replacing lines ``at .. remove_to``."""

    at: int
    remove_to: int
    text: str
    tag: str
    order: int


@dataclass(frozen=True, slots=True)
class _Copying:
    """One copied member being generated: the copy, its blocks, and where it goes."""

    module: ModulePatches
    copy: Copy
    blocks: list[Block]
    upstream: Upstream
    #: Indentation of the member in the output.
    indent: str


def _add_copy(assembly: _Assembly, job: _Copying, decided: Copied) -> None:
    module, copy, upstream = job.module, job.copy, job.upstream
    facts = decided.facts
    if facts is None:
        _vanished(assembly, job)
        return
    member = facts.member
    decisions = list(decided.decisions)
    edits = [
        _signature_edit(facts, d, order)
        if d.block.kind is BlockKind.SIGNATURE
        else _edit(upstream.tree, d, order)
        for order, d in enumerate(decisions)
    ]
    assembly.decisions.extend((d.block.id, d, copy) for d in decisions)
    upstream_indent = _indent_of(upstream.tree.lines[member.start - 1])
    assembly.segments.append(_Segment(copy.leading, copy.id))
    for segment in _cut(upstream.tree, member, edits):
        segment.text = reindent(segment.text, upstream_indent, job.indent)
        assembly.segments.append(segment)
    assembly.conflicts.extend(d for d in decisions if d.conflict)
    for decision in decisions:
        found = findings.notes(module, decision, upstream, member.start)
        assembly.notes.extend((decision.block.id, finding) for finding in found)


def _signature_edit(facts: MemberFacts, decision: locate.Decision, order: int) -> _Edit:
    """The text edit of a signature edit's decision: carried when upstream kept the
    signature the omni edit started from, merged when both sides changed different
    parameters, a conflict before the member otherwise."""
    tree, member, block = facts.tree, facts.member, decision.block
    indent = _indent_of(tree.lines[member.start - 1])
    if decision.conflict:
        text = _conflict_lines(block, decision.reason, (), indent)
        return _Edit(member.start, member.start - 1, text, block.id, order)
    if decision.follow:
        code = tree.text(member.start, header_end(member))
    else:
        code = reindent(decision.code if decision.code is not None else block.code, "", indent)
    return _Edit(member.start, header_end(member), code, block.id, order)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _cut(tree: Tree, member: Stmt, edits: list[_Edit]) -> Iterator[_Segment]:
    """The member's upstream lines with the edits applied, as segments."""
    cursor = member.start
    for edit in sorted(edits, key=lambda e: (e.at, e.order)):
        if edit.at > cursor:
            yield _Segment(tree.text(cursor, edit.at - 1), "")
            cursor = edit.at
        yield _Segment(edit.text, edit.tag)
        cursor = max(cursor, edit.remove_to + 1)
    if cursor <= member.full_end:
        yield _Segment(tree.text(cursor, member.full_end), "")


def _edit(tree: Tree, decision: locate.Decision, order: int) -> _Edit:
    """The text edit that puts a decided block at its slot.

    A block's code carries the blank lines that surrounded it in the source; the upstream
    blank lines next to the edit give way to them.
    """
    block = decision.block
    slot = decision.slot
    if slot is None:
        raise ValueError("a decision without a slot cannot be placed")
    stmts = slot.suite.stmts
    indent = slot.suite.indent or ""
    if decision.conflict:
        at = stmts[slot.index].lead if slot.index < len(stmts) else stmts[-1].full_end + 1
        return _Edit(at, at - 1, _conflict_text(decision, indent), block.id, order)
    if decision.follow:
        return _followed(tree, decision, order)
    code = reindent(decision.code if decision.code is not None else block.code, "", indent)
    if block.kind is BlockKind.HEADER:
        target = stmts[slot.index]
        return _Edit(target.start, header_end(target), code, block.id, order)
    following = stmts[slot.index + slot.span] if slot.index + slot.span < len(stmts) else None
    if following is None:
        code = code.rstrip("\n") + "\n" if code.strip() else ""
    if block.kind is BlockKind.DELETION and decision.code is None:
        first, last = stmts[slot.index], stmts[slot.index + slot.span - 1]
        return _Edit(first.lead, last.full_end, "", block.id, order)
    if slot.span:
        first, last = stmts[slot.index], stmts[slot.index + slot.span - 1]
        start = first.start - _blank_suffix(tree, first)
        end = last.full_end + (_blank_prefix(tree, following) if following is not None else 0)
        return _Edit(start, end, code, block.id, order)
    if following is None:
        at = stmts[-1].full_end + 1
        return _Edit(at, at - 1, code, block.id, order)
    return _Edit(
        following.lead, following.lead + _blank_prefix(tree, following) - 1, code, block.id, order
    )


def _followed(tree: Tree, decision: locate.Decision, order: int) -> _Edit:
    """Upstream's own statements at the slot, unchanged, tagged with the decided block."""
    slot = decision.slot
    assert slot is not None
    stmts = slot.held()
    if not stmts:
        at = slot.line() or 1
        return _Edit(at, at - 1, "", decision.block.id, order)
    first, last = stmts[0], stmts[-1]
    # A compound header keeps its body out of the edit: edits of the body are other blocks'.
    end = header_end(first) if decision.block.kind is BlockKind.HEADER else last.full_end
    return _Edit(first.start, end, tree.text(first.start, end), decision.block.id, order)


def _blank_prefix(tree: Tree, stmt: Stmt) -> int:
    """Blank lines at the start of a statement's leading lines."""
    count = 0
    while stmt.lead + count < stmt.start and not tree.lines[stmt.lead + count - 1].strip():
        count += 1
    return count


def _blank_suffix(tree: Tree, stmt: Stmt) -> int:
    """Blank lines right above a statement, within its leading lines."""
    count = 0
    while stmt.start - count - 1 >= stmt.lead and not tree.lines[stmt.start - count - 2].strip():
        count += 1
    return count


def _conflict_text(decision: locate.Decision, indent: str) -> str:
    return _conflict_lines(decision.block, decision.reason, decision.candidates, indent)


def _conflict_lines(
    block: Block, reason: str, candidates: Sequence[locate.Scored], indent: str
) -> str:
    lines = [f"{CONFLICT_OPEN} {block.id}" + (f" ({block.title})" if block.title else "")]
    lines.append(f"# {reason}.")
    for scored in candidates:
        place = candidate_place(scored.slot.line(), scored.slot.span)
        where = f"upstream {place} (score {scored.score:.2f})"
        lines.append(f"{CONFLICT_CANDIDATE} {where}: {shorten(scored.slot.text())}")
    lines.append(
        f"# Place the block by hand, or record a choice with `omni-port resolve {block.id}`."
    )
    body = (
        block.code.rstrip("\n").split("\n")
        if block.code.strip()
        else ["<deletion of the upstream statements listed above>"]
    )
    lines.extend((CONFLICT_LINE + line).rstrip() for line in body)
    lines.append(CONFLICT_CLOSE)
    return "".join(f"{indent}{line}\n" for line in lines)


def _vanished(assembly: _Assembly, job: _Copying) -> None:
    copy, indent = job.copy, job.indent
    where = f"{copy.upstream_owner}.{copy.upstream_name}".lstrip(".")
    finding = findings.vanished(job.module, copy, len(job.blocks), job.upstream)
    assembly.vanished.append((copy, finding))
    text = f"{indent}{CONFLICT_OPEN} {copy.id}: upstream {where}{CONFLICT_VANISHED}\n"
    for block in job.blocks:
        decision = locate.Decision(block, None, 0.0, True, (), f"upstream {where} vanished")
        assembly.decisions.append((block.id, decision, copy))
        body = [CONFLICT_LINE + line for line in block.code.rstrip("\n").split("\n")]
        text += "".join(f"{indent}{line.rstrip()}\n" for line in body)
    text += f"{indent}{CONFLICT_CLOSE}\n"
    # The class may have no other member: a statement keeps its body valid Python.
    text += f"{indent}pass  # omni-port: {copy.name} is not generated (see the conflict above)\n"
    assembly.segments.append(_Segment(copy.leading + text, copy.id))


# --- report rows ----------------------------------------------------------------------------


def _line_ranges(segments: Sequence[_Segment]) -> dict[str, tuple[int, int]]:
    ranges: dict[str, tuple[int, int]] = {}
    line = 1
    for segment in segments:
        count = segment.text.count("\n")
        if segment.tag and count:
            start, end = line, line + count - 1
            old = ranges.get(segment.tag)
            ranges[segment.tag] = (min(old[0], start), max(old[1], end)) if old else (start, end)
        line += count
    return ranges


def _points(segments: Sequence[_Segment]) -> dict[str, int]:
    """The output line each tag starts at, a tag with no lines included (the line that
    follows where it stands)."""
    points: dict[str, int] = {}
    line = 1
    for segment in segments:
        if segment.tag:
            points.setdefault(segment.tag, line)
        line += segment.text.count("\n")
    return points


def _carried_rows(
    module: ModulePatches, carried: list[Piece], ranges: dict[str, tuple[int, int]]
) -> Iterator[Placement]:
    for piece in carried:
        if isinstance(piece, Chunk) and piece.marked:
            start, end = ranges.get(piece.id, (0, 0))
            kind = RegionKind.CLASS_LEVEL if piece.owner else RegionKind.MODULE_LEVEL
            yield Placement(
                piece.id,
                module.name,
                piece.owner,
                piece.name,
                kind,
                True,
                Status.CARRIED,
                1.0,
                start,
                end,
            )


@dataclass(frozen=True, slots=True)
class _Standing:
    """What finds the output lines of upstream statements that stand for a followed edit's
    code elsewhere (``Decision.stands``)."""

    upstream: Tree
    text: str
    #: The output line each tag starts at (``_points``).
    points: dict[str, int]

    def lines(self, decision: locate.Decision) -> tuple[int, int]:
        """The output lines holding the text of ``decision.stands``, the occurrence
        nearest where the edit stands; (0, 0) when it has none."""
        stands = decision.stands
        if stands is None or not stands.span:
            return (0, 0)
        held = stands.held()
        want = [
            line.strip() for line in self.upstream.text(held[0].start, held[-1].end).splitlines()
        ]
        lines = [line.strip() for line in self.text.splitlines()]
        width = len(want)
        found = [i for i in range(len(lines) - width + 1) if lines[i : i + width] == want]
        near = self.points.get(decision.block.id, 0)
        if not found:
            return (0, 0)
        first = min(found, key=lambda i: (abs(i + 1 - near), i))
        return first + 1, first + width


def _decision_rows(
    module: ModulePatches,
    assembly: _Assembly,
    ranges: dict[str, tuple[int, int]],
    standing: _Standing,
) -> Iterator[Placement]:
    for block_id, decision, copy in assembly.decisions:
        block = decision.block
        start, end = (
            ranges.get(block_id, (0, 0)) if block_id in ranges else standing.lines(decision)
        )
        if not block.code and not (decision.conflict or decision.follow):
            start, end = (start, start - 1) if start else (0, 0)
        status = Status.CONFLICT if decision.conflict else Status.PLACED
        if decision.follow and decision.release:
            status = Status.FOLLOWED
        resolution = block.anchor.resolution
        if resolution is not None and resolution.dropped and not decision.conflict:
            status = Status.DROPPED
        candidates = tuple(
            Candidate(s.slot.line(), s.score, s.slot.text(), s.slot.path, s.slot.span)
            for s in decision.candidates
        )
        yield Placement(
            block_id,
            module.name,
            copy.owner,
            copy.name,
            block.kind,
            block.marked,
            status,
            decision.score,
            start,
            end,
            candidates,
            decision.reason,
            () if decision.conflict else decision.rules,
            decision.release,
        )
