"""Build a generated runner module: omni code verbatim, upstream copies with blocks spliced in.

The module is assembled as a list of tagged text segments (a tag is the id of the piece
or block a segment came from), so every block's output line range is known at the end.
Copies are cut from the new upstream by line ranges and re-indented only; blocks keep
their own bytes. A conflict is never dropped: it lands at its best candidate as a
commented region that still parses.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

# The conflict region's lines are written here; they are the model's, so that the
# runtime reads them without this module.
from omni_port.model import CONFLICT_CLOSE as CONFLICT_CLOSE
from omni_port.model import CONFLICT_LINE as CONFLICT_LINE
from omni_port.model import CONFLICT_OPEN as CONFLICT_OPEN
from omni_port.model import (
    Block,
    BlockKind,
    Candidate,
    Chunk,
    ClassHeader,
    Code,
    Copy,
    Finding,
    ModulePatches,
    Piece,
    Placement,
    RegionKind,
    Severity,
    Status,
    Stmt,
    Tree,
    Upstream,
)
from omni_port.pyast.syntax import header_end, reindent
from omni_port.report import candidate_place, shorten
from omni_port.sync import imports, locate
from omni_port.sync.evidence import catalog
from omni_port.sync.facts import Declared, MemberFacts, ModuleFacts
from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import RULES


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


def build(
    module: ModulePatches,
    upstream: Upstream,
    header: str,
    locations: Mapping[str, str] | None = None,
    rules: Sequence[PlacementRule] = RULES,
    declared: Declared | None = None,
) -> Built:
    """Generate one runner module from its patches and the new upstream.

    ``locations`` are the catalog's ``Location:`` lines by block id (constraints);
    ``rules`` the placement rules the engine asks (all of them, but in a golden case that
    asks one rule alone); ``declared`` what the patch set's marked blocks replace.
    """
    return assemble(decide(module, upstream, locations, rules, declared), header)


@dataclass(frozen=True, slots=True)
class Copied:
    """One copied member, decided: the decisions of its blocks, statements first (in block
    order), then signatures, the order their edits apply in."""

    copy: Copy
    blocks: tuple[Block, ...]
    #: The member's facts; None when the upstream member vanished.
    facts: MemberFacts | None
    decisions: tuple[locate.Decision, ...] = ()


@dataclass(frozen=True, slots=True)
class Decided:
    """Every copied member of a module decided: what ``assemble`` writes out. A report
    step (``offers``) may change what a conflict says before it is written."""

    module: ModulePatches
    upstream: Upstream
    known: ModuleFacts
    rules: tuple[PlacementRule, ...]
    #: The decided copies, by copy id.
    copies: Mapping[str, Copied]


def decide(
    module: ModulePatches,
    upstream: Upstream,
    locations: Mapping[str, str] | None = None,
    rules: Sequence[PlacementRule] = RULES,
    declared: Declared | None = None,
) -> Decided:
    """Where every block of ``module`` goes in the new upstream (``build``'s arguments)."""
    known = ModuleFacts.build(module, upstream, locations, declared)
    copied = [
        (piece, tuple(blocks), known.member_facts(piece, blocks))
        for piece, blocks in _grouped(module.pieces)
        if isinstance(piece, Copy)
    ]
    copies = {c.copy.id: c for c in decide_copies(copied, rules)}
    return Decided(module, upstream, known, tuple(rules), copies)


#: A copied member to decide: the copy, its blocks, and its facts (None when it vanished).
ToDecide = tuple[Copy, tuple[Block, ...], MemberFacts | None]


def decide_copies(
    copied: Sequence[ToDecide], rules: Sequence[PlacementRule] = RULES
) -> list[Copied]:
    """The decisions of each copy's blocks on its facts, the copies decided together (the
    module rules weigh them all): none for a copy that vanished."""
    present = [(facts, _statements(blocks)) for _, blocks, facts in copied if facts is not None]
    decided = iter(locate.decide(present, rules))
    found = []
    for copy, blocks, facts in copied:
        if facts is None:
            found.append(Copied(copy, blocks, None))
            continue
        statements = [_with_fallback(d, facts.member) for d in next(decided)]
        signatures = [
            locate.signature(facts, b, rules) for b in blocks if b.kind is BlockKind.SIGNATURE
        ]
        found.append(Copied(copy, blocks, facts, (*statements, *signatures)))
    return found


def _statements(blocks: Sequence[Block]) -> list[Block]:
    return [b for b in blocks if b.kind is not BlockKind.SIGNATURE]


def decide_copy(
    copy: Copy,
    blocks: tuple[Block, ...],
    facts: MemberFacts | None,
    rules: Sequence[PlacementRule] = RULES,
) -> Copied:
    """The decisions of ``copy``'s ``blocks`` on ``facts`` (none when it vanished), the
    copy decided alone."""
    return decide_copies([(copy, blocks, facts)], rules)[0]


def assemble(decided: Decided, header: str) -> Built:
    """The module text of ``decided``, opening with ``header``, and what became of each
    block and piece."""
    module, upstream = decided.module, decided.upstream
    assembly = _Assembly([_Segment(header, "header")])
    class_indent = ""
    for piece, blocks in _grouped(module.pieces):
        if isinstance(piece, ClassHeader):
            class_indent = piece.body_indent
        if isinstance(piece, Copy):
            indent = class_indent if piece.owner else ""
            job = _Copying(module, piece, blocks, upstream, indent, decided.rules)
            _add_copy(assembly, job, decided.copies[piece.id], decided.known)
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
        assembly.findings.append(_conflict_finding(module, decision, upstream, line))
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
        *_decision_rows(module, assembly, ranges),
    ]
    return Built(module.name, text, tuple(placements), tuple(assembly.findings))


def assembly_text(segments: Sequence[_Segment]) -> str:
    return "".join(segment.text for segment in segments)


def _grouped(pieces: Sequence[Piece]) -> Iterator[tuple[Piece, list[Block]]]:
    """Each non-block piece with the blocks of the copy it is (blocks follow their copy)."""
    current: tuple[Piece, list[Block]] | None = None
    for piece in pieces:
        if isinstance(piece, Block):
            if current is not None and isinstance(current[0], Copy):
                current[1].append(piece)
                continue
            raise ValueError(f"block {piece.id} does not follow its copied member")
        if current is not None:
            yield current
        current = (piece, [])
    if current is not None:
        yield current


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
    #: The placement rules the engine asks.
    rules: tuple[PlacementRule, ...]


def _add_copy(assembly: _Assembly, job: _Copying, decided: Copied, known: ModuleFacts) -> None:
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
        ident = decision.block.id
        if not decision.conflict and decision.release:
            assembly.notes.append((ident, _history_finding(module, decision, upstream)))
        if decision.review is not None and not decision.conflict:
            assembly.notes.append((ident, _review_finding(module, decision, upstream)))
        if decision.dispute is not None and not decision.conflict:
            assembly.notes.append((ident, _counterpart_finding(module, decision, upstream)))
        if decision.carried and not decision.conflict:
            message = (
                f"{module.name}: {ident}: {decision.carried}: review whether it still needs it"
            )
            line = decision.slot.line() if decision.slot is not None else member.start
            note = Finding(Code.OP313, upstream.path, line, message, severity=Severity.NOTE)
            assembly.notes.append((ident, note))
        resolution = decision.block.anchor.resolution
        if resolution is not None and resolution.dropped and not decision.conflict:
            message = f"{module.name}: {ident}: {decision.reason}"
            note = Finding(
                Code.OP312, upstream.label, member.start, message, severity=Severity.NOTE
            )
            assembly.notes.append((ident, note))
        if _breaks_location(decision, known, member):
            constraint = known.constraints[ident]
            finding = _location_finding(module, decision, upstream, constraint)
            assembly.notes.append((ident, finding))


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


def _with_fallback(decision: locate.Decision, member: Stmt) -> locate.Decision:
    """A conflict with no candidate at all is shown at the end of the method body."""
    if decision.slot is not None:
        return decision
    body = member.clauses[0]
    slot = locate.Slot(body, (), len(body.stmts))
    return locate.Decision(
        decision.block, slot, decision.score, True, decision.candidates, decision.reason
    )


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
        lines.append(f"#   candidate: {where}: {shorten(scored.slot.text())}")
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
    finding = Finding(
        Code.OP302,
        job.module.name,
        1,
        f"{where} no longer exists in {job.upstream.label}; the copy {copy.id} and its "
        f"{len(job.blocks)} blocks are left commented out",
    )
    assembly.vanished.append((copy, finding))
    text = f"{indent}{CONFLICT_OPEN} {copy.id}: upstream {where} vanished\n"
    for block in job.blocks:
        decision = locate.Decision(block, None, 0.0, True, (), f"upstream {where} vanished")
        assembly.decisions.append((block.id, decision, copy))
        body = [CONFLICT_LINE + line for line in block.code.rstrip("\n").split("\n")]
        text += "".join(f"{indent}{line.rstrip()}\n" for line in body)
    text += f"{indent}{CONFLICT_CLOSE}\n"
    # The class may have no other member: a statement keeps its body valid Python.
    text += f"{indent}pass  # omni-port: {copy.name} is not generated (see the conflict above)\n"
    assembly.segments.append(_Segment(copy.leading + text, copy.id))


def _breaks_location(decision: locate.Decision, known: ModuleFacts, member: Stmt) -> bool:
    constraint = known.constraints.get(decision.block.id)
    if decision.conflict or decision.slot is None or constraint is None:
        return False
    return catalog.allows(constraint, decision.slot, member) is False


def _location_finding(
    module: ModulePatches,
    decision: locate.Decision,
    upstream: Upstream,
    constraint: catalog.Constraint,
) -> Finding:
    """A block placed where the catalog's Location line says it does not go."""
    line = decision.slot.line() if decision.slot is not None else 0
    message = (
        f"{module.name}: block {decision.block.id} is placed where its catalog Location "
        f"does not put it ({constraint.text})"
    )
    return Finding(Code.OP409, upstream.path, line, message)


def _counterpart_finding(
    module: ModulePatches, decision: locate.Decision, upstream: Upstream
) -> Finding:
    """A note for a block placed as the NPU runner has it, where omni's GPU runner has it
    elsewhere and upstream code between reads what it binds: one of the two runners may
    compute that code with the wrong value (the next upgrade makes it a conflict)."""
    line = decision.slot.line() if decision.slot is not None else 0
    message = (
        f"{module.name}: block {decision.block.id} is placed as the NPU runner has it, but "
        f"{decision.dispute.why if decision.dispute else ''}: check which runner is right"
    )
    return Finding(Code.OP308, upstream.path, line, message, severity=Severity.NOTE)


def _review_finding(
    module: ModulePatches, decision: locate.Decision, upstream: Upstream
) -> Finding:
    """A note for omni's code winning over upstream's edit of the statements it replaces:
    the edit, as a diff, is the maintainer's to review."""
    review = decision.review
    assert review is not None
    line = decision.slot.line() if decision.slot is not None else 0
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
    return Finding(Code.OP309, upstream.path, line, message, detail=diff, severity=Severity.NOTE)


def _history_finding(
    module: ModulePatches, decision: locate.Decision, upstream: Upstream
) -> Finding:
    """A note for an edit upstream history explains: a lag, drift, or a merge against an
    older release (every part of it upstream changed since is such a lag too)."""
    line = decision.slot.line() if decision.slot is not None else 0
    code = Code.OP306 if decision.lag is not None else Code.OP307
    message = f"{module.name}: edit {decision.block.id}: {decision.reason}"
    return Finding(code, upstream.path, line, message, severity=Severity.NOTE)


def _conflict_finding(
    module: ModulePatches, decision: locate.Decision, upstream: Upstream, line: int
) -> Finding:
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


def _decision_rows(
    module: ModulePatches, assembly: _Assembly, ranges: dict[str, tuple[int, int]]
) -> Iterator[Placement]:
    for block_id, decision, copy in assembly.decisions:
        block = decision.block
        start, end = ranges.get(block_id, (0, 0))
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
