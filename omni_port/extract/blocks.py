"""The blocks of one copied member: where its body departs from the base method's.

Marked regions become blocks as they stand; with a base, every unmarked difference does
too (insertions, replacements, deletions, edited compound headers, an edited signature),
each anchored on the upstream statements around it so that a later sync can find its
place in another upstream version.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from omni_port.extract.markers import Region
from omni_port.model import Anchor, Block, BlockKind, Edge, Origin, Stmt, Suite, Tree
from omni_port.pyast import diff
from omni_port.pyast.syntax import full_key, header_end, reindent, split_full_key, walk
from omni_port.report import shorten

#: How many upstream neighbours an anchor remembers on each side.
CONTEXT = 3


@dataclass(frozen=True, slots=True)
class MarkedTree:
    """A parsed runner module with its marker regions."""

    tree: Tree
    regions: tuple[Region, ...]

    def regions_in(self, suite: Suite) -> list[Region]:
        return [r for r in self.regions if r.suite is suite]

    def regions_under(self, stmt: Stmt) -> list[Region]:
        return [r for r in self.regions if stmt.start < r.opener.line <= stmt.full_end]

    def pinned_lines(self, stmt: Stmt) -> set[int]:
        """Lines of ``stmt`` inside marked regions: omni code whatever the base says."""
        lines: set[int] = set()
        for region in self.regions_under(stmt):
            lines.update(range(region.opener.line, region.closer.line + 1))
        return lines

    def own_lines(self, stmt: Stmt, upstream: set[str]) -> set[int]:
        """Lines of ``stmt`` inside marked regions that hold code of omni's own (a
        statement ``upstream`` has not): upstream code such a region fences is upstream's.
        A region of upstream code only is a block as it stands."""
        lines: set[int] = set()
        for region in self.regions_under(stmt):
            held = [s for s in region.suite.stmts if region.opener.line < s.start]
            held = [s for s in held if s.start < region.closer.line]
            if any(full_key(s) not in upstream for s in held):
                lines.update(range(region.opener.line, region.closer.line + 1))
        return lines

    def origin(self, start: int, end: int) -> Origin:
        return Origin(self.tree.path, start, end)


@dataclass(frozen=True, slots=True)
class _Scope:
    """One copied member's extraction: its tree, whether unmarked edits count, and the
    class and member every block of it belongs to."""

    marked: MarkedTree
    implicit: bool
    owner: str
    member: str


@dataclass(frozen=True, slots=True)
class _Segment:
    """A run of omni statements in one body gap: a marked region or unmarked statements."""

    first: int
    last: int
    stmts: tuple[Stmt, ...]
    region: Region | None
    #: Marker lines the code repeats (opener, closer): the part of a region that upstream
    #: code it fences splits is marked on its own.
    fence: tuple[bool, bool] = (False, False)


def member_blocks(
    marked: MarkedTree, member: Stmt, base: Stmt | None, owner: str, implicit: bool
) -> list[Block]:
    """The blocks of a copied member, in source order, still without ids.

    With a base, the member's body is aligned with the base method's: marked regions and
    (when ``implicit``) every unmarked difference become blocks. Without one, only the
    marked regions do.
    """
    ctx = _Scope(marked, implicit, owner, member.name)
    body = member.clauses[0]
    pinned = marked.pinned_lines(member)
    match = None
    if base is not None:
        own = marked.own_lines(member, _upstream_code(base))
        match = diff.align(
            base.clauses[0], body, lambda s: s.start in pinned, lambda s: s.start in own
        )
    blocks = list(_suite_blocks(ctx, body, match, ()))
    if base is not None and implicit:
        line = marked.tree.lines[member.start - 1]
        signature = _signature_block(ctx, member, base, line[: -len(line.lstrip())])
        blocks.extend([signature] if signature is not None else [])
    blocks.sort(key=lambda b: (b.origin.start, b.origin.end))
    for region in marked.regions_under(member):
        if not any(
            b.origin.start <= region.closer.line and region.opener.line <= b.origin.end
            for b in blocks
        ):
            raise AssertionError(f"marked region at line {region.opener.line} fell through")
    return blocks


def _upstream_code(base: Stmt) -> set[str]:
    """Full keys of every statement of the base member, at any depth."""
    return {full_key(s) for _, suite in walk(base.clauses[0]) for s in suite.stmts}


def _suite_blocks(
    ctx: _Scope,
    suite: Suite,
    match: diff.SuiteMatch | None,
    path: tuple[str, ...],
) -> Iterator[Block]:
    regions = ctx.marked.regions_in(suite)
    upstream = _upstream_indices(suite, match, regions)
    yield from _gap_blocks(ctx, suite, match, upstream, regions, path)
    keys = _upstream_keys(suite, match, upstream)
    for index in upstream:
        stmt = suite.stmts[index]
        base_stmt = match.old.stmts[match.new_to_old()[index]] if match is not None else stmt
        if base_stmt.key != stmt.key and ctx.implicit:
            anchor = _header_anchor(keys, index, path, base_stmt)
            yield _header_block(ctx, suite, stmt, anchor)
        for clause in stmt.clauses:
            child = match.child_for(clause) if match is not None else None
            if match is not None and child is None:
                continue
            label = child.old.label if child is not None else clause.label
            inner = (*path, base_stmt.key) + ((label,) if label else ())
            yield from _suite_blocks(ctx, clause, child, inner)


def _header_anchor(
    keys: list[tuple[int, str]], index: int, path: tuple[str, ...], base_stmt: Stmt
) -> Anchor:
    """The anchor of an edit of the header of the upstream statement at ``index``."""
    before = [k for i, k in keys if i < index][::-1][:CONTEXT]
    after = [k for i, k in keys if i > index][:CONTEXT]
    return Anchor(
        path, tuple(before), tuple(after), (base_stmt.key,), edge_of(bool(before), bool(after))
    )


def _header_block(ctx: _Scope, suite: Suite, stmt: Stmt, anchor: Anchor) -> Block:
    """An omni edit of an upstream compound statement's header (its bodies are matched)."""
    end = header_end(stmt)
    code = reindent(ctx.marked.tree.text(stmt.start, end), suite.indent or "", "")
    title = "Implicit edit of a header: " + shorten(stmt.key, 72)
    return Block(
        "",
        ctx.owner,
        ctx.member,
        BlockKind.HEADER,
        False,
        code,
        anchor,
        ctx.marked.origin(stmt.start, end),
        title,
    )


def _signature_block(ctx: _Scope, member: Stmt, base: Stmt, indent: str) -> Block | None:
    """The omni edit of a copied member's decorators and signature, if there is one."""
    if member.key == base.key:
        return None
    end = header_end(member)
    code = reindent(ctx.marked.tree.text(member.start, end), indent, "")
    anchor = Anchor((), (), (), (base.key,), Edge.ONLY)
    title = "Implicit edit of the signature: " + shorten(member.key, 72)
    return Block(
        "",
        ctx.owner,
        member.name,
        BlockKind.SIGNATURE,
        False,
        code,
        anchor,
        ctx.marked.origin(member.start, end),
        title,
    )


def _upstream_indices(
    suite: Suite, match: diff.SuiteMatch | None, regions: list[Region]
) -> list[int]:
    """Indices of the statements of ``suite`` that are upstream code."""
    if match is not None:
        return sorted(match.new_to_old())
    inside = {
        s.start for r in regions for s in suite.stmts if r.opener.line < s.start < r.closer.line
    }
    return [i for i, s in enumerate(suite.stmts) if s.start not in inside]


def _gap_blocks(
    ctx: _Scope,
    suite: Suite,
    match: diff.SuiteMatch | None,
    upstream: list[int],
    regions: list[Region],
    path: tuple[str, ...],
) -> Iterator[Block]:
    keys = _upstream_keys(suite, match, upstream)
    for old_run, new_run, segments in _gaps(ctx, suite, match, upstream, regions):
        old = [match.old.stmts[i] for i in old_run] if match is not None else []
        replaced = tuple(full_key(stmt) for stmt in old)
        before = [k for i, k in keys if i < new_run.start][::-1][:CONTEXT]
        after = [k for i, k in keys if i >= new_run.stop][:CONTEXT]
        edge = edge_of(bool(before), bool(after))
        taker = _replacement_taker(segments, ctx.implicit)
        shares = _shares(old, segments, taker) if taker is not None else [()] * len(segments)
        for position, segment in enumerate(segments):
            if segment.region is None and not ctx.implicit:
                continue
            gets = shares[position]
            kind = BlockKind.REPLACEMENT if gets else BlockKind.INSERTION
            # Segments sharing a gap with replacements anchor on the statements they replaced.
            earlier = [key for share in shares[:position] for key in share]
            later = [key for share in shares[position + 1 :] for key in share]
            near_before = [*earlier[::-1], *before][:CONTEXT]
            near_after = [*later, *after][:CONTEXT]
            anchor = Anchor(
                path,
                tuple(near_before),
                tuple(near_after),
                gets,
                edge_of(bool(near_before), bool(near_after)),
            )
            yield _segment_block(ctx, suite, segment, anchor, kind)
        if replaced and taker is None and ctx.implicit:
            anchor = Anchor(path, tuple(before), tuple(after), replaced, edge)
            first = match.old.stmts[old_run.start] if match is not None else None
            line = suite.stmts[new_run.start].lead if new_run else _gap_line(suite, new_run)
            yield Block(
                "",
                ctx.owner,
                ctx.member,
                BlockKind.DELETION,
                False,
                "",
                anchor,
                ctx.marked.origin(line, line - 1),
                _deletion_title(first),
            )


def _upstream_keys(
    suite: Suite, match: diff.SuiteMatch | None, upstream: list[int]
) -> list[tuple[int, str]]:
    if match is None:
        return [(i, suite.stmts[i].key) for i in upstream]
    old_of = match.new_to_old()
    return [(i, match.old.stmts[old_of[i]].key) for i in upstream]


def _gaps(
    ctx: _Scope,
    suite: Suite,
    match: diff.SuiteMatch | None,
    upstream: list[int],
    regions: list[Region],
) -> Iterator[tuple[range, range, list[_Segment]]]:
    """Each run of non-upstream code, with the base statements it stands in for."""
    if match is not None:
        gaps = list(match.gaps())
    else:
        gaps = [(range(0), run) for run in _runs(len(suite.stmts), set(upstream))]
    # A region of comments only holds no statement, so no run of statements contains it.
    for region in regions:
        at = next(
            (i for i, s in enumerate(suite.stmts) if s.start > region.opener.line),
            len(suite.stmts),
        )
        if not any(run.start <= at <= run.stop for _, run in gaps):
            gaps.append((range(0), range(at, at)))
    for old_run, new_run in sorted(gaps, key=lambda g: (g[1].start, g[1].stop)):
        segments = _segments(ctx, suite, new_run, regions)
        if segments or old_run:
            yield old_run, new_run, segments


def _runs(count: int, upstream: set[int]) -> Iterator[range]:
    """Maximal runs of indices in ``range(count)`` that are not upstream."""
    start = None
    for index in range(count + 1):
        inside = index < count and index not in upstream
        if inside and start is None:
            start = index
        elif not inside and start is not None:
            yield range(start, index)
            start = None


def _segments(ctx: _Scope, suite: Suite, gap: range, regions: list[Region]) -> list[_Segment]:
    """Split a gap into marked regions and runs of unmarked statements, in order."""
    segments: list[_Segment] = []
    taken: set[int] = set()
    lo = suite.stmts[gap.start - 1].full_end if gap.start > 0 else 0
    hi = suite.stmts[gap.stop].start if gap.stop < len(suite.stmts) else suite.end + 1
    for region in regions:
        segment = _region_segment(ctx, suite, gap, region, (lo, hi))
        if segment is not None:
            segments.append(segment)
            taken.update(id(s) for s in segment.stmts)
    run: list[Stmt] = []
    for index in gap:
        stmt = suite.stmts[index]
        if id(stmt) in taken:
            if run:
                segments.append(_run_segment(ctx, run))
                run = []
            continue
        run.append(stmt)
    if run:
        segments.append(_run_segment(ctx, run))
    segments.sort(key=lambda s: s.first)
    return _with_blank_lines(ctx, suite, segments)


def _with_blank_lines(ctx: _Scope, suite: Suite, segments: list[_Segment]) -> list[_Segment]:
    """Give each segment the blank lines around it, and no line of its neighbour.

    A segment owns the blank lines right before its first line and, when an upstream
    statement follows, the blank lines right after its last: splicing puts them back
    instead of the upstream's own, which is what keeps an unchanged upstream byte-exact.
    """
    lines = ctx.marked.tree.lines
    result: list[_Segment] = []
    for position, segment in enumerate(segments):
        first = segment.first
        if result:
            first = max(first, result[-1].last + 1)
        while first > 1 and not lines[first - 2].strip() and _in_gap(suite, first - 1):
            if result and first - 1 <= result[-1].last:
                break
            first -= 1
        last = segment.last
        following = segments[position + 1].first if position + 1 < len(segments) else None
        end = last
        while (
            end < len(lines)
            and not lines[end].strip()
            and _in_gap(suite, end + 1)
            and end + 1 <= suite.end
        ):
            end += 1
        next_code = end + 1
        upstream_follows = any(s.start >= next_code for s in suite.stmts)
        segment_follows = following is not None and following <= next_code
        if end > last and next_code <= suite.end and upstream_follows and not segment_follows:
            last = end
        result.append(replace(segment, first=first, last=last))
    return result


def _run_segment(ctx: _Scope, run: list[Stmt]) -> _Segment:
    """Unmarked statements; marked when they hold a region deeper down (never lose it)."""
    first, last = _first_text_line(ctx, run[0]), run[-1].full_end
    nested = [r for r in ctx.marked.regions if first <= r.opener.line and r.closer.line <= last]
    return _Segment(first, last, tuple(run), nested[0] if nested else None)


def _region_segment(
    ctx: _Scope, suite: Suite, gap: range, region: Region, bounds: tuple[int, int]
) -> _Segment | None:
    """The part of a marked region in one gap: all of it, unless upstream statements it
    holds verbatim (paired with the base's, ``diff.align``) split it."""
    inside = [i for i, s in enumerate(suite.stmts) if region.opener.line < s.start]
    inside = [i for i in inside if suite.stmts[i].start < region.closer.line]
    if not inside:  # comments only
        lo, hi = bounds
        whole = _Segment(region.opener.line, region.closer.line, (), region)
        return whole if lo < region.opener.line < hi else None
    part = [i for i in inside if i in gap]
    if not part:
        return None
    stmts = tuple(suite.stmts[i] for i in part)
    opens, closes = part[0] == inside[0], part[-1] == inside[-1]
    first = region.opener.line if opens else _first_text_line(ctx, stmts[0])
    last = region.closer.line if closes else stmts[-1].full_end
    return _Segment(first, last, stmts, region, (not opens, not closes))


def _first_text_line(ctx: _Scope, stmt: Stmt) -> int:
    """First non-blank line of a statement with its leading comments."""
    line = stmt.lead
    while line < stmt.start and not ctx.marked.tree.lines[line - 1].strip():
        line += 1
    return line


def _in_gap(suite: Suite, line: int) -> bool:
    """Whether a blank line sits between statements of ``suite`` (not inside one)."""
    return not any(s.start <= line <= s.full_end for s in suite.stmts)


def _gap_line(suite: Suite, gap: range) -> int:
    if gap.start < len(suite.stmts):
        return suite.stmts[gap.start].lead
    return suite.end + 1


#: How alike a base statement and a statement of a segment beside the gap's replacement
#: must be for that segment to stand in for it (an edit of that statement of its own).
OWN_EDIT = 0.8


def _shares(
    old: Sequence[Stmt], segments: Sequence[_Segment], taker: _Segment
) -> list[tuple[str, ...]]:
    """The full keys of the base statements each segment replaces, in segment order.

    The taker stands in for the gap's base statements, except where a segment beside it
    holds an edit of one at its end of the gap: an unmarked ``if`` that lost a clause,
    next to a marked block. That segment replaces it itself (the taker may be left with
    none: an insertion): a marked block owns only what omni changed in it
    (docs/design.md, rules 2 and 4), and the edit is ported as an edit of that
    statement, not lost with the block's replacement.
    """
    at = segments.index(taker)
    first, stop = 0, len(old)
    shares: list[list[Stmt]] = [[] for _ in segments]
    for position in range(len(segments) - 1, at, -1):
        while stop > first and _stands_for(segments[position], old[stop - 1], taker):
            stop -= 1
            shares[position].insert(0, old[stop])
    for position in range(at):
        while stop > first and _stands_for(segments[position], old[first], taker):
            shares[position].append(old[first])
            first += 1
    shares[at] = list(old[first:stop])
    return [tuple(full_key(stmt) for stmt in share) for share in shares]


def _stands_for(segment: _Segment, base: Stmt, taker: _Segment) -> bool:
    """Whether ``segment`` holds an edit of ``base``, more alike than anything the taker holds."""
    mine = max((diff.similarity(base.key, s.key) for s in segment.stmts), default=0.0)
    theirs = max((diff.similarity(base.key, s.key) for s in taker.stmts), default=0.0)
    return mine >= OWN_EDIT and mine > theirs


def _replacement_taker(segments: list[_Segment], implicit: bool) -> _Segment | None:
    """The segment that stands in for the gap's base statements: the first marked one."""
    marked = [s for s in segments if s.region is not None]
    if marked:
        return marked[0]
    if implicit and segments:
        return segments[0]
    return None


def edge_of(has_before: bool, has_after: bool) -> Edge:
    if has_before and has_after:
        return Edge.NONE
    if has_after:
        return Edge.FIRST
    if has_before:
        return Edge.LAST
    return Edge.ONLY


def _segment_block(
    ctx: _Scope,
    suite: Suite,
    segment: _Segment,
    anchor: Anchor,
    kind: BlockKind,
) -> Block:
    tree = ctx.marked.tree
    text = tree.text(segment.first, segment.last)
    if segment.region is not None and segment.fence[0]:
        text = tree.text(segment.region.opener.line, segment.region.opener.line) + text
    if segment.region is not None and segment.fence[1]:
        text += tree.text(segment.region.closer.line, segment.region.closer.line)
    code = reindent(text, suite.indent or "", "")
    heading = block_title(tree, segment.region) if segment.region else _implicit_title(segment)
    return Block(
        "",
        ctx.owner,
        ctx.member,
        kind,
        segment.region is not None,
        code,
        anchor,
        ctx.marked.origin(segment.first, segment.last),
        heading,
        fenced=segment.fence,
    )


_COMMENT_TITLE = re.compile(
    r"^\s*#\s*(?:\[omni\]\s*|omni[-\s]?specific:?\s*|omni:\s*)?(?P<text>.+)$", re.I
)


def block_title(tree: Tree, region: Region | None) -> str:
    """A block's default title: the marker's own title, else its first plain comment."""
    if region is None:
        return ""
    if region.opener.title:
        return region.opener.title
    for number in range(region.opener.line + 1, region.closer.line):
        text = tree.lines[number - 1].strip()
        if not text:
            continue
        if text.startswith("#"):
            match = _COMMENT_TITLE.match(text)
            if match and any(c.isalpha() for c in match.group("text")):
                return shorten(match.group("text"), 72)
            continue
        return shorten(text, 72)
    return "Omni-new block"


def _implicit_title(segment: _Segment) -> str:
    return (
        "Implicit edit: " + shorten(segment.stmts[0].key, 72) if segment.stmts else "Implicit edit"
    )


def _deletion_title(stmt: Stmt | None) -> str:
    return (
        "Implicit deletion: " + shorten(stmt.key, 72) if stmt is not None else "Implicit deletion"
    )


# --- comments, which statement keys do not see ----------------------------------------------


@dataclass(frozen=True, slots=True)
class CommentDrift:
    """A comment line of a copied member that sync will not reproduce."""

    #: Line in the omni source (added) or in the base (removed).
    line: int
    #: "added" by omni outside every block, or "removed" by omni from upstream code.
    change: str
    text: str


def comment_drift(
    marked: MarkedTree, member: Stmt, base_tree: Tree, base: Stmt, blocks: Sequence[Block]
) -> list[CommentDrift]:
    """Comments omni added to or removed from upstream code outside every block.

    Statements compare without their comments, so such an edit is neither a block nor an
    implicit edit: sync takes the comments of the new upstream there. Reported, not lost.
    """
    carried = marked.pinned_lines(member) | {
        line for b in blocks for line in range(b.origin.start, b.origin.end + 1)
    }
    mine = [c for c in _comments(marked.tree, member) if c[0] not in carried]
    every = _comments(base_tree, base)
    # An upstream comment comes back with the statement it belongs to; a replaced or
    # deleted statement leaves its leading comments in place.
    kept = {s.key for s in _flat(member) if s.start not in carried}
    replaced = {split_full_key(k)[0] for b in blocks for k in b.anchor.replaced}
    theirs = [c for c in every if _comes_back(base, c[0], kept, replaced)]
    added = Counter(text for _, text in mine) - Counter(text for _, text in every)
    removed = Counter(text for _, text in theirs) - Counter(text for _, text in mine)
    drift = [CommentDrift(line, "added", text) for line, text in mine if _take(added, text)]
    drift += [CommentDrift(line, "removed", text) for line, text in theirs if _take(removed, text)]
    return drift


def _flat(member: Stmt) -> list[Stmt]:
    found: list[Stmt] = []
    for clause in member.clauses:
        for _, suite in walk(clause):
            found.extend(suite.stmts)
    return found


def _comes_back(base: Stmt, line: int, kept: set[str], replaced: set[str]) -> bool:
    """Whether sync keeps the base comment at ``line``: its statement is kept, or the
    comment leads a statement that a block replaced."""
    owners = [
        s for s in _flat(base) if s.lead <= line <= (header_end(s) if s.clauses else s.full_end)
    ]
    if not owners:
        return False
    owner = max(owners, key=lambda s: s.lead)
    return owner.key in kept or (line < owner.start and owner.key in replaced)


def _take(counts: Counter[str], text: str) -> bool:
    if counts[text] <= 0:
        return False
    counts[text] -= 1
    return True


def _comments(tree: Tree, member: Stmt) -> list[tuple[int, str]]:
    """(line, text) of every comment in a member, its decorators included."""
    source = tree.text(member.start, member.full_end)
    found: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found.append((member.start + token.start[0] - 1, token.string.strip()))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return found
