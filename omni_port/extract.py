"""Split an omni runner module into pieces: owned code, upstream copies and anchored blocks.

Every source line lands in exactly one piece, except the code of a copied member, which is
upstream's: a later sync takes it from the new upstream and splices the member's blocks
back in. A member is a copy when it overrides an upstream method and mostly consists of
that method's statements (with a base), or when it holds statement-level markers (without
one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from omni_port import diff
from omni_port.errors import BadInput
from omni_port.markers import Region, scan
from omni_port.model import (
    Anchor,
    Block,
    BlockKind,
    Chunk,
    ClassHeader,
    Code,
    Copy,
    Edge,
    Finding,
    ModulePatches,
    Origin,
    Piece,
    Severity,
)
from omni_port.names import unused_import_names
from omni_port.syntax import (
    Stmt,
    Suite,
    Tree,
    find_def,
    full_key,
    header_end,
    parse,
    reindent,
    walk,
)
from omni_port.textio import SourceText

#: How many upstream neighbours an anchor remembers on each side.
CONTEXT = 3
_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


@dataclass(frozen=True, slots=True)
class Base:
    """The upstream module the source was ported from."""

    #: ``vllm-ascend==0.18.0`` or a path.
    label: str
    sha256: str
    tree: Tree


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    #: Upstream class whose methods the runner classes copy.
    upstream_class: str = "NPUModelRunner"
    #: Extract what can be extracted despite malformed markers (they become findings).
    lenient: bool = False
    #: Record unmarked differences from the base as implicit edits.
    implicit: bool = True
    #: Least share of a member's own statements found in the base method for a copy.
    copy_threshold: float = 0.5


@dataclass(frozen=True, slots=True)
class Extraction:
    module: ModulePatches
    #: Malformed markers (lenient mode) and notes.
    findings: tuple[Finding, ...]


def extract_module(
    source: SourceText,
    name: str,
    base: Base | None = None,
    options: ExtractOptions = ExtractOptions(),
) -> Extraction:
    """Extract the pieces of one runner module.

    Raises BadInput for a syntax error, or for malformed markers unless ``lenient``.
    """
    tree = parse(source.text, source.path)
    found = scan(tree)
    if found.findings and not options.lenient:
        raise BadInput(found.findings)
    ctx = _Context(tree, name.removesuffix(".py"), found.regions, base, options)
    pieces = tuple(_module_pieces(ctx))
    module = ModulePatches(
        name=name,
        source=source.path,
        source_sha256=source.sha256,
        base=base.label if base else "",
        base_sha256=base.sha256 if base else "",
        pieces=pieces,
        newline=source.newline,
        unused_imports=unused_import_names(source.text, source.path),
    )
    notes = [] if base else [_no_base_note(source.path, pieces)]
    return Extraction(module, found.findings + tuple(n for n in notes if n is not None))


def _no_base_note(path: str, pieces: Sequence[Piece]) -> Finding | None:
    if not any(isinstance(p, Copy) for p in pieces):
        return None
    return Finding(
        "note",
        Code.OP901,
        path,
        0,
        "no --base given: members with statement-level markers are treated as upstream "
        "copies, and omni edits outside markers in them are not carried",
        severity=Severity.NOTE,
    )


@dataclass(slots=True)
class _Context:
    tree: Tree
    stem: str
    regions: tuple[Region, ...]
    base: Base | None
    options: ExtractOptions
    used_ids: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)

    def unique(self, ident: str) -> str:
        """``ident``, suffixed when taken (a property and its setter share a name)."""
        candidate, n = ident, 1
        while candidate in self.used_ids:
            n += 1
            candidate = f"{ident}-{n}"
        self.used_ids.add(candidate)
        return candidate

    def numbered(self, prefix: str, label: str) -> str:
        """``prefix`` + ``label-NN``, numbered in source order per prefix and label.

        A hyphen never occurs in a Python name, so these never collide with member ids.
        """
        key = prefix + label
        self.counters[key] = self.counters.get(key, 0) + 1
        return self.unique(f"{prefix}{label}-{self.counters[key]:02d}")

    def regions_in(self, suite: Suite) -> list[Region]:
        return [r for r in self.regions if r.suite is suite]

    def origin(self, start: int, end: int) -> Origin:
        return Origin(self.tree.path, start, end)


@dataclass(frozen=True, slots=True)
class _Unit:
    """A run of lines of a body: one statement, one marked region, or trailing comments."""

    first: int
    last: int
    stmts: tuple[Stmt, ...]
    region: Region | None = None


def _partition(suite: Suite, regions: list[Region], first_line: int) -> Iterator[_Unit]:
    """Cut a body into units that cover its lines without gaps or overlaps."""
    stmts = list(suite.stmts)
    cursor = first_line
    index = 0
    for region in sorted(regions, key=lambda r: r.opener.line):
        while index < len(stmts) and stmts[index].full_end < region.opener.line:
            yield _Unit(cursor, stmts[index].full_end, (stmts[index],))
            cursor = stmts[index].full_end + 1
            index += 1
        inside = []
        while index < len(stmts) and stmts[index].start < region.closer.line:
            inside.append(stmts[index])
            index += 1
        yield _Unit(cursor, region.closer.line, tuple(inside), region)
        cursor = region.closer.line + 1
    for stmt in stmts[index:]:
        yield _Unit(cursor, stmt.full_end, (stmt,))
        cursor = stmt.full_end + 1
    if cursor <= suite.end:
        yield _Unit(cursor, suite.end, ())


def _module_pieces(ctx: _Context) -> Iterator[Piece]:
    body = ctx.tree.body
    pending: list[_Unit] = []
    for unit in _partition(body, ctx.regions_in(body), 1):
        special = _special_module_unit(ctx, unit)
        if special is None:
            pending.append(unit)
            continue
        if pending:
            yield _chunk(ctx, pending, "", "module", "")
            pending = []
        yield from special
    if pending:
        yield _chunk(ctx, pending, "", "module", "")


def _special_module_unit(ctx: _Context, unit: _Unit) -> list[Piece] | None:
    """Pieces for a unit that is not plain module code, or None to merge it into a chunk."""
    if unit.region is not None:
        return [_chunk(ctx, [unit], "", "block", "", marked=True)]
    stmt = unit.stmts[0] if unit.stmts else None
    if stmt is None or not stmt.name:
        return None
    base_def = _base_module_def(ctx, stmt)
    if base_def is not None:
        return [_copy(ctx, unit, stmt, "", "", base_def), *_copy_blocks(ctx, stmt, base_def, "")]
    if stmt.kind == "ClassDef" and _is_runner_class(ctx, stmt):
        return list(_class_pieces(ctx, unit, stmt))
    return [_chunk(ctx, [unit], "", stmt.name, stmt.name)]


def _base_module_def(ctx: _Context, stmt: Stmt) -> Stmt | None:
    """The base's module-level definition this one copies, if it is a copy."""
    if ctx.base is None:
        return None
    candidate = find_def(ctx.base.tree.body, stmt.name)
    if candidate is None or candidate.kind != stmt.kind or not candidate.clauses:
        return None
    return candidate if _similar(ctx, stmt, candidate) >= ctx.options.copy_threshold else None


def _is_runner_class(ctx: _Context, stmt: Stmt) -> bool:
    """A class worth splitting into members: it holds copies or marked regions."""
    body = stmt.clauses[0]
    if body.indent is None:
        return False
    return bool(_regions_under(ctx, stmt)) or any(
        _member_base(ctx, member) is not None for member in body.stmts
    )


def _class_pieces(ctx: _Context, unit: _Unit, stmt: Stmt) -> Iterator[Piece]:
    body = stmt.clauses[0]
    first_body = body.stmts[0].lead
    header_id = ctx.unique(f"{ctx.stem}.{stmt.name}")
    yield ClassHeader(
        header_id,
        stmt.name,
        ctx.tree.text(unit.first, first_body - 1),
        body.indent or "",
        ctx.origin(stmt.start, first_body - 1),
    )
    pending: list[_Unit] = []
    for member_unit in _partition(body, ctx.regions_in(body), first_body):
        pieces = _member_pieces(ctx, member_unit, stmt.name)
        if pieces is None:
            pending.append(member_unit)
            continue
        if pending:
            yield _chunk(ctx, pending, stmt.name, "body", "")
            pending = []
        yield from pieces
    if pending:
        yield _chunk(ctx, pending, stmt.name, "body", "")


def _member_pieces(ctx: _Context, unit: _Unit, owner: str) -> list[Piece] | None:
    """Pieces for a class member, or None to merge it into the surrounding class code."""
    if unit.region is not None:
        return [_chunk(ctx, [unit], owner, "block", "", marked=True)]
    stmt = unit.stmts[0] if unit.stmts else None
    if stmt is None or not stmt.name:
        return None
    base = _member_base(ctx, stmt)
    marked_copy = ctx.base is None and stmt.kind in _DEF_KINDS and bool(_regions_under(ctx, stmt))
    if base is None and not marked_copy:
        return [_chunk(ctx, [unit], owner, stmt.name, stmt.name)]
    copy = _copy(ctx, unit, stmt, owner, ctx.options.upstream_class, base)
    return [copy, *_copy_blocks(ctx, stmt, base, owner)]


def _member_base(ctx: _Context, stmt: Stmt) -> Stmt | None:
    """The base method a member is a copy of, if it is one (never without a base)."""
    if stmt.kind not in _DEF_KINDS or ctx.base is None:
        return None
    upstream = find_def(ctx.base.tree.body, ctx.options.upstream_class)
    method = find_def(upstream.clauses[0], stmt.name) if upstream and upstream.clauses else None
    if method is None or method.kind not in _DEF_KINDS:
        return None
    return method if _similar(ctx, stmt, method) >= ctx.options.copy_threshold else None


def _similar(ctx: _Context, stmt: Stmt, base_stmt: Stmt) -> float:
    """Share of the member's own (unmarked) statements found in order in the base."""
    pinned = _pinned_lines(ctx, stmt)
    own = [k for k, line in _flat(stmt.clauses[0]) if line not in pinned]
    if len(own) < 2:
        return 0.0
    return diff.containment(own, diff.flat_keys(base_stmt.clauses[0]))


def _flat(suite: Suite) -> Iterator[tuple[str, int]]:
    for stmt in suite.stmts:
        yield stmt.key, stmt.start
        for clause in stmt.clauses:
            yield from _flat(clause)


def _regions_under(ctx: _Context, stmt: Stmt) -> list[Region]:
    return [r for r in ctx.regions if stmt.start < r.opener.line <= stmt.full_end]


def _pinned_lines(ctx: _Context, stmt: Stmt) -> set[int]:
    lines: set[int] = set()
    for region in _regions_under(ctx, stmt):
        lines.update(range(region.opener.line, region.closer.line + 1))
    return lines


def _chunk(
    ctx: _Context, units: Sequence[_Unit], owner: str, label: str, name: str, marked: bool = False
) -> Chunk:
    first, last = units[0].first, units[-1].last
    prefix = f"{ctx.stem}.{owner}." if owner else f"{ctx.stem}."
    ident = ctx.unique(prefix + name) if name else ctx.numbered(prefix, label)
    region = units[0].region
    title = _title(ctx.tree, region) if region is not None else ""
    return Chunk(
        ident, owner, name, ctx.tree.text(first, last), ctx.origin(first, last), marked, title
    )


def _copy(
    ctx: _Context, unit: _Unit, stmt: Stmt, owner: str, upstream_owner: str, base: Stmt | None
) -> Copy:
    similarity = _similar(ctx, stmt, base) if base is not None else None
    prefix = f"{ctx.stem}.{owner}." if owner else f"{ctx.stem}."
    return Copy(
        id=ctx.unique(prefix + stmt.name),
        owner=owner,
        name=stmt.name,
        upstream_owner=upstream_owner,
        upstream_name=stmt.name,
        leading=ctx.tree.text(unit.first, stmt.start - 1),
        origin=ctx.origin(stmt.start, stmt.full_end),
        similarity=None if similarity is None else round(similarity, 3),
    )


# --- blocks of a copied member -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Segment:
    """A run of omni statements in one body gap: a marked region or unmarked statements."""

    first: int
    last: int
    stmts: tuple[Stmt, ...]
    region: Region | None


def _copy_blocks(ctx: _Context, member: Stmt, base: Stmt | None, owner: str) -> list[Block]:
    body = member.clauses[0]
    pinned = _pinned_lines(ctx, member)
    match = None
    if base is not None:
        match = diff.align(base.clauses[0], body, lambda s: s.start in pinned)
    prefix = f"{ctx.stem}.{owner}.{member.name}" if owner else f"{ctx.stem}.{member.name}"
    blocks = list(_suite_blocks(ctx, body, match, (), owner, member.name))
    if base is not None and ctx.options.implicit:
        indent = ctx.tree.lines[member.start - 1][: -len(ctx.tree.lines[member.start - 1].lstrip())]
        signature = signature_block(ctx, member, base, owner, indent)
        blocks.extend([signature] if signature is not None else [])
    blocks.sort(key=lambda b: (b.origin.start, b.origin.end))
    for region in _regions_under(ctx, member):
        if not any(b.origin.start <= region.opener.line <= b.origin.end for b in blocks):
            raise AssertionError(f"marked region at line {region.opener.line} fell through")
    return [
        _with_id(block, ctx.numbered(prefix + ".", "block" if block.marked else "edit"))
        for block in blocks
    ]


def _with_id(block: Block, ident: str) -> Block:
    return Block(
        ident,
        block.owner,
        block.member,
        block.kind,
        block.marked,
        block.code,
        block.anchor,
        block.origin,
        block.title,
    )


def _suite_blocks(
    ctx: _Context,
    suite: Suite,
    match: diff.SuiteMatch | None,
    path: tuple[str, ...],
    owner: str,
    member: str,
) -> Iterator[Block]:
    regions = ctx.regions_in(suite)
    upstream = _upstream_indices(suite, match, regions)
    yield from _gap_blocks(ctx, suite, match, upstream, regions, path, owner, member)
    keys = _upstream_keys(suite, match, upstream)
    for index in upstream:
        stmt = suite.stmts[index]
        base_stmt = match.old.stmts[match.new_to_old()[index]] if match is not None else stmt
        if base_stmt.key != stmt.key and ctx.options.implicit:
            yield _header_block(ctx, suite, stmt, base_stmt, keys, index, path, owner, member)
        for clause in stmt.clauses:
            child = match.child_for(clause) if match is not None else None
            if match is not None and child is None:
                continue
            label = child.old.label if child is not None else clause.label
            inner = (*path, base_stmt.key) + ((label,) if label else ())
            yield from _suite_blocks(ctx, clause, child, inner, owner, member)


def _header_block(
    ctx: _Context,
    suite: Suite,
    stmt: Stmt,
    base_stmt: Stmt,
    keys: list[tuple[int, str]],
    index: int,
    path: tuple[str, ...],
    owner: str,
    member: str,
) -> Block:
    """An omni edit of an upstream compound statement's header (its bodies are matched)."""
    before = [k for i, k in keys if i < index][::-1][:CONTEXT]
    after = [k for i, k in keys if i > index][:CONTEXT]
    anchor = Anchor(
        path, tuple(before), tuple(after), (base_stmt.key,), _edge(bool(before), bool(after))
    )
    end = header_end(stmt)
    code = reindent(ctx.tree.text(stmt.start, end), suite.indent or "", "")
    title = "Unmarked edit of a header: " + _short(stmt.key)
    return Block(
        "", owner, member, BlockKind.HEADER, False, code, anchor, ctx.origin(stmt.start, end), title
    )


def signature_block(
    ctx: _Context, member: Stmt, base: Stmt, owner: str, indent: str
) -> Block | None:
    """The omni edit of a copied member's decorators and signature, if there is one."""
    if member.key == base.key:
        return None
    end = header_end(member)
    code = reindent(ctx.tree.text(member.start, end), indent, "")
    anchor = Anchor((), (), (), (base.key,), Edge.ONLY)
    title = "Unmarked edit of the signature: " + _short(member.key)
    return Block(
        "", owner, member.name, BlockKind.SIGNATURE, False, code, anchor,
        ctx.origin(member.start, end), title,
    )  # fmt: skip


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
    ctx: _Context,
    suite: Suite,
    match: diff.SuiteMatch | None,
    upstream: list[int],
    regions: list[Region],
    path: tuple[str, ...],
    owner: str,
    member: str,
) -> Iterator[Block]:
    keys = _upstream_keys(suite, match, upstream)
    for old_run, new_run, segments in _gaps(ctx, suite, match, upstream, regions):
        replaced = tuple(full_key(match.old.stmts[i]) for i in old_run) if match is not None else ()
        before = [k for i, k in keys if i < new_run.start][::-1][:CONTEXT]
        after = [k for i, k in keys if i >= new_run.stop][:CONTEXT]
        edge = _edge(bool(before), bool(after))
        taker = _replacement_taker(segments, ctx.options.implicit)
        taker_at = segments.index(taker) if taker is not None else -1
        for position, segment in enumerate(segments):
            if segment.region is None and not ctx.options.implicit:
                continue
            gets = replaced if segment is taker else ()
            kind = BlockKind.REPLACEMENT if gets else BlockKind.INSERTION
            # Segments sharing a gap with a replacement anchor on the statements it replaced.
            near_before, near_after = before, after
            if taker is not None and replaced and position > taker_at:
                near_before = [*replaced[::-1], *before][:CONTEXT]
            elif taker is not None and replaced and position < taker_at:
                near_after = [*replaced, *after][:CONTEXT]
            anchor = Anchor(
                path,
                tuple(near_before),
                tuple(near_after),
                gets,
                _edge(bool(near_before), bool(near_after)),
            )
            yield _segment_block(ctx, suite, segment, anchor, kind, owner, member)
        if replaced and taker is None and ctx.options.implicit:
            anchor = Anchor(path, tuple(before), tuple(after), replaced, edge)
            first = match.old.stmts[old_run.start] if match is not None else None
            line = suite.stmts[new_run.start].lead if new_run else _gap_line(suite, new_run)
            yield Block(
                "",
                owner,
                member,
                BlockKind.DELETION,
                False,
                "",
                anchor,
                ctx.origin(line, line - 1),
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
    ctx: _Context,
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


def _segments(ctx: _Context, suite: Suite, gap: range, regions: list[Region]) -> list[_Segment]:
    """Split a gap into marked regions and runs of unmarked statements, in order."""
    segments: list[_Segment] = []
    taken: set[int] = set()
    lo = suite.stmts[gap.start - 1].full_end if gap.start > 0 else 0
    hi = suite.stmts[gap.stop].start if gap.stop < len(suite.stmts) else suite.end + 1
    for region in regions:
        if lo < region.opener.line < hi:
            segment = _region_segment(ctx, suite, region)
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


def _with_blank_lines(ctx: _Context, suite: Suite, segments: list[_Segment]) -> list[_Segment]:
    """Give each segment the blank lines around it, and no line of its neighbour.

    A segment owns the blank lines right before its first line and, when an upstream
    statement follows, the blank lines right after its last: splicing puts them back
    instead of the upstream's own, which is what keeps an unchanged upstream byte-exact.
    """
    lines = ctx.tree.lines
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
        result.append(_Segment(first, last, segment.stmts, segment.region))
    return result


def _run_segment(ctx: _Context, run: list[Stmt]) -> _Segment:
    """Unmarked statements; marked when they hold a region deeper down (never lose it)."""
    first, last = _first_text_line(ctx, run[0]), run[-1].full_end
    nested = [r for r in ctx.regions if first <= r.opener.line and r.closer.line <= last]
    return _Segment(first, last, tuple(run), nested[0] if nested else None)


def _region_segment(ctx: _Context, suite: Suite, region: Region) -> _Segment:
    inside = tuple(s for s in suite.stmts if region.opener.line < s.start < region.closer.line)
    return _Segment(region.opener.line, region.closer.line, inside, region)


def _first_text_line(ctx: _Context, stmt: Stmt) -> int:
    """First non-blank line of a statement with its leading comments."""
    line = stmt.lead
    while line < stmt.start and not ctx.tree.lines[line - 1].strip():
        line += 1
    return line


def _in_gap(suite: Suite, line: int) -> bool:
    """Whether a blank line sits between statements of ``suite`` (not inside one)."""
    return not any(s.start <= line <= s.full_end for s in suite.stmts)


def _gap_line(suite: Suite, gap: range) -> int:
    if gap.start < len(suite.stmts):
        return suite.stmts[gap.start].lead
    return suite.end + 1


def _replacement_taker(segments: list[_Segment], implicit: bool) -> _Segment | None:
    """The segment that stands in for the gap's base statements: the first marked one."""
    marked = [s for s in segments if s.region is not None]
    if marked:
        return marked[0]
    if implicit and segments:
        return segments[0]
    return None


def _edge(has_before: bool, has_after: bool) -> Edge:
    if has_before and has_after:
        return Edge.NONE
    if has_after:
        return Edge.FIRST
    if has_before:
        return Edge.LAST
    return Edge.ONLY


def _segment_block(
    ctx: _Context,
    suite: Suite,
    segment: _Segment,
    anchor: Anchor,
    kind: BlockKind,
    owner: str,
    member: str,
) -> Block:
    code = reindent(ctx.tree.text(segment.first, segment.last), suite.indent or "", "")
    title = _title(ctx.tree, segment.region) if segment.region else _implicit_title(segment)
    return Block(
        "",
        owner,
        member,
        kind,
        segment.region is not None,
        code,
        anchor,
        ctx.origin(segment.first, segment.last),
        title,
    )


_COMMENT_TITLE = re.compile(
    r"^\s*#\s*(?:\[omni\]\s*|omni[-\s]?specific:?\s*|omni:\s*)?(?P<text>.+)$", re.I
)


def _title(tree: Tree, region: Region | None) -> str:
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
                return _short(match.group("text"))
            continue
        return _short(text)
    return "Omni-new block"


def _implicit_title(segment: _Segment) -> str:
    return "Unmarked edit: " + _short(segment.stmts[0].key) if segment.stmts else "Unmarked edit"


def _deletion_title(stmt: Stmt | None) -> str:
    return "Unmarked deletion: " + _short(stmt.key) if stmt is not None else "Unmarked deletion"


def _short(text: str, limit: int = 72) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def iter_marked_suites(tree: Tree) -> Iterator[tuple[tuple[str, ...], Suite]]:
    """Bodies of ``tree`` that hold at least one marker region (for reports)."""
    regions = scan(tree).regions
    for path, suite in walk(tree.body):
        if any(r.suite is suite for r in regions):
            yield path, suite
