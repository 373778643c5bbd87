"""Split an omni runner module into pieces: owned code, upstream copies and anchored blocks.

Every source line lands in exactly one piece, except the code of a copied member, which is
upstream's: a later sync takes it from the new upstream and splices the member's blocks
back in. A member is a copy when it overrides an upstream method and mostly consists of
that method's statements (with a base), or when it holds statement-level markers (without
one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from omni_port.errors import BadInput
from omni_port.extract.blocks import (
    CommentDrift,
    MarkedTree,
    block_title,
    comment_drift,
    member_blocks,
)
from omni_port.extract.counterpart import counterpart_anchor, method_in
from omni_port.extract.markers import Region, scan
from omni_port.model import (
    Block,
    Chunk,
    ClassHeader,
    Code,
    Copy,
    Finding,
    ModulePatches,
    Origin,
    Piece,
    Severity,
    SourceText,
    Stmt,
    Suite,
    Tree,
    Upstream,
)
from omni_port.pyast import diff
from omni_port.pyast.names import unused_import_names
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import find_def, is_docstring

_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


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
    base: Upstream | None = None,
    options: ExtractOptions = ExtractOptions(),
    counterpart: SourceText | None = None,
    tree: Tree | None = None,
) -> Extraction:
    """Extract the pieces of one runner module; ``counterpart`` is omni's GPU runner beside
    it, where blocks get their second anchor; ``tree`` the source's tree when the caller
    has it (kept in the cache by content: base detection parsed the runners already).

    Raises BadInput for a syntax error, for a module that defines no class (an empty file
    is no runner: OP004, with its malformed markers), or for malformed markers unless
    ``lenient``.
    """
    tree = parse(source.text, source.path) if tree is None else tree
    found = scan(tree)
    if found.findings and not options.lenient:
        raise BadInput(found.findings)
    if not any(stmt.kind == "ClassDef" for stmt in tree.body.stmts):
        what = "is empty" if not source.text.strip() else "defines no class"
        message = f"not a runner module: it {what} (a runner defines the runner classes)"
        raise BadInput([*found.findings, Finding(Code.OP004, source.path, 1, message)])
    marked = MarkedTree(tree, found.regions)
    theirs = _counterpart_tree(counterpart)
    ctx = _Context(marked, name.removesuffix(".py"), base, options, theirs)
    pieces = tuple(_module_pieces(ctx))
    module = ModulePatches(
        name=name,
        source=source.path,
        source_sha256=source.sha256,
        base=base.label if base else "",
        base_sha256=base.sha256 if base else "",
        pieces=pieces,
        newline=source.newline,
        bom=source.bom,
        unused_imports=unused_import_names(source.text, source.path),
    )
    notes = [*ctx.notes, *([] if base else [_no_base_note(source.path, pieces)])]
    return Extraction(module, found.findings + tuple(n for n in notes if n is not None))


def _comment_note(path: str, owner: str, member: Stmt, drift: Sequence[CommentDrift]) -> Finding:
    added = sum(1 for d in drift if d.change == "added")
    where = f"{owner}.{member.name}" if owner else member.name
    message = (
        f"{len(drift)} comment lines of {where} differ from the base outside every block "
        f"(omni added {added}, removed {len(drift) - added}); sync keeps upstream's comments "
        "there (put the change in a marked block to carry it)"
    )
    detail = "\n".join(
        f"line {d.line}: {d.text}"
        if d.change == "added"
        else f"upstream line {d.line}: {d.text} (removed)"
        for d in drift
    )
    line = next((d.line for d in drift if d.change == "added"), member.start)
    return Finding(Code.OP902, path, line, message, detail=detail, severity=Severity.NOTE)


def _no_base_note(path: str, pieces: Sequence[Piece]) -> Finding | None:
    if not any(isinstance(p, Copy) for p in pieces):
        return None
    return Finding(
        Code.OP901,
        path,
        1,
        "no --base given: members with statement-level markers are treated as upstream "
        "copies, and omni edits outside markers in them are not carried",
        severity=Severity.NOTE,
    )


def _counterpart_tree(source: SourceText | None) -> Tree | None:
    if source is None:
        return None
    try:
        return parse(source.text, source.path)
    except BadInput:
        return None  # an unreadable GPU runner only means no second anchor


@dataclass(slots=True)
class _Context:
    marked: MarkedTree
    stem: str
    base: Upstream | None
    options: ExtractOptions
    counterpart: Tree | None = None
    used_ids: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)
    notes: list[Finding] = field(default_factory=list)

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

    @property
    def tree(self) -> Tree:
        return self.marked.tree

    def regions_in(self, suite: Suite) -> list[Region]:
        return self.marked.regions_in(suite)

    def origin(self, start: int, end: int) -> Origin:
        return self.marked.origin(start, end)

    def member_blocks(self, member: Stmt, base: Stmt | None, owner: str) -> list[Block]:
        """The member's blocks, numbered per member in source order."""
        prefix = f"{self.stem}.{owner}.{member.name}." if owner else f"{self.stem}.{member.name}."
        blocks = member_blocks(self.marked, member, base, owner, self.options.implicit)
        if base is not None and self.base is not None:
            drift = comment_drift(self.marked, member, self.base.tree, base, blocks)
            self.notes.extend(
                [_comment_note(self.tree.path, owner, member, drift)] if drift else []
            )
        theirs = method_in(self.counterpart, member.name) if self.counterpart else None
        return [
            dataclasses.replace(
                b,
                id=self.numbered(prefix, "block" if b.marked else "edit"),
                counterpart=counterpart_anchor(b, theirs) if theirs is not None else None,
            )
            for b in blocks
        ]


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
        return [_copy(ctx, unit, stmt, "", "", base_def), *ctx.member_blocks(stmt, base_def, "")]
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
    return bool(ctx.marked.regions_under(stmt)) or any(
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
    marked_copy = (
        ctx.base is None and stmt.kind in _DEF_KINDS and bool(ctx.marked.regions_under(stmt))
    )
    if base is None and not marked_copy:
        return [_chunk(ctx, [unit], owner, stmt.name, stmt.name)]
    copy = _copy(ctx, unit, stmt, owner, ctx.options.upstream_class, base)
    return [copy, *ctx.member_blocks(stmt, base, owner)]


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
    """Share of the member's own (unmarked) statements found in order in the base; 0.0
    for a member of fewer than two statements besides a docstring, which tells nothing of
    where it was copied from: vLLM-Omni's V2 Code2Wav ``profile_run`` (a docstring and
    ``torch.accelerator.synchronize()``, a deliberate skip) would be half a copy of vLLM's
    (``basedetect`` ranks bases on the same condition)."""
    pinned = ctx.marked.pinned_lines(stmt)
    own = [s for s in _flat(stmt.clauses[0]) if s.start not in pinned]
    if sum(1 for s in own if not is_docstring(s)) < 2:
        return 0.0
    return diff.containment([s.key for s in own], diff.flat_keys(base_stmt.clauses[0]))


def _flat(suite: Suite) -> Iterator[Stmt]:
    for stmt in suite.stmts:
        yield stmt
        for clause in stmt.clauses:
            yield from _flat(clause)


def _chunk(
    ctx: _Context, units: Sequence[_Unit], owner: str, label: str, name: str, marked: bool = False
) -> Chunk:
    first, last = units[0].first, units[-1].last
    prefix = f"{ctx.stem}.{owner}." if owner else f"{ctx.stem}."
    ident = ctx.unique(prefix + name) if name else ctx.numbered(prefix, label)
    region = units[0].region
    heading = block_title(ctx.tree, region) if region is not None else ""
    return Chunk(
        ident, owner, name, ctx.tree.text(first, last), ctx.origin(first, last), marked, heading
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
