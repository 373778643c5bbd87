"""Who reads what upstream statements bind, in a member's output (evidence).

A lag (upstream code the runners never had) is followed where it does something
(docs/design.md rule 7). A plain binding does something only through its readers: when
upstream read the names it binds only in statements omni's blocks replace or delete (or in
other such bindings), and nothing in the output reads them, following it writes a dead
store and the call that computes it, which no maintainer would write. The output is judged
as the member's decisions make it: upstream's statements less those a placed block replaces,
and every block's own code (a conflict's too: it may be placed where it reads them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from omni_port.model import BlockKind
from omni_port.pyast.syntax import names_of
from omni_port.sync.context import Decision
from omni_port.sync.evidence.bindings import binds
from omni_port.sync.evidence.code import binds_locals, nested, with_body
from omni_port.sync.facts import Flows, Places, Stmt, Syntax


@dataclass(frozen=True, slots=True)
class Unread:
    """An upstream statement whose bindings nothing in the output reads."""

    #: The statement.
    stmt: Stmt
    #: The ids of the blocks that replace or delete upstream's readers of what it binds
    #: (through the readers that are unread bindings themselves), in member order.
    removed_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reading:
    """The providers a reading of the member's output needs."""

    syntax: Syntax
    places: Places
    flows: Flows


@dataclass(frozen=True, slots=True)
class _Output:
    """The member's output, as far as reads go."""

    #: Upstream statements a placed block takes out, by ``id``, with that block's id.
    removed: dict[int, str]
    #: Every upstream statement of the member, with the names it reads itself (a
    #: compound statement's header alone: its bodies are statements of their own).
    upstream: tuple[tuple[Stmt, frozenset[str]], ...]
    #: Names the blocks' own code reads.
    blocks: frozenset[str]


def unread(
    code: Reading, decisions: Sequence[Decision], candidates: Sequence[Stmt]
) -> list[Unread]:
    """Those of ``candidates`` (upstream statements the output keeps as a lag) that only
    bind plain locals, which nothing in the output reads, and which upstream read only in
    statements the member's placed blocks take out (or in other such candidates): the
    largest such set, each with the blocks that took its readers out. A binding upstream
    itself never reads is upstream's, not left unread by omni: it is never among them."""
    output = _output(code, decisions)
    if output is None:
        return []
    dead = {id(s): s for s in candidates if binds_locals(s) and id(s) not in output.removed}
    changed = True
    while changed:
        changed = False
        for key, stmt in list(dead.items()):
            readers = [s for s, reads in output.upstream if s is not stmt and reads & stmt.writes]
            live = [s for s in readers if id(s) not in output.removed and id(s) not in dead]
            if live or not readers or stmt.writes & output.blocks:
                del dead[key]
                changed = True
    return [Unread(s, _removers(output, dead, s)) for s in candidates if id(s) in dead]


@dataclass(frozen=True, slots=True)
class Unbound:
    """An upstream statement the output keeps that reads a local only a placed block's
    replaced statements bound."""

    #: The local.
    name: str
    #: The statement that still reads it.
    reader: Stmt
    #: The conflicts among the member's blocks that replace the reader in their base (what
    #: keeps it in the output), in member order.
    kept_by: tuple[str, ...]


def unbound(
    code: Reading,
    decisions: Sequence[Decision],
    parameters: frozenset[str],
    old: frozenset[str] | None,
) -> dict[str, Unbound]:
    """By block id, the first upstream statement kept in the output that reads a local the
    decision's placed code takes out with the statements it replaces, which nothing else in
    the output binds (not its own code, another placed block, a kept statement nor
    ``parameters``). Placed, such a block leaves a read of an unbound name that the old
    runner did not have: a block that replaced the reader is a conflict, or upstream added
    the reader (its key is not among ``old``, the keys of the base's statements; None when
    the base is unknown). A reader the old runner kept as it is, is omni's own."""
    output = _output(code, decisions)
    if output is None:
        return {}
    kept = [(s, reads) for s, reads in output.upstream if id(s) not in output.removed]
    bound = {n for s, _ in kept for n in _own_writes(code.syntax, s)} | parameters
    mine = {d.block.id: _binds(code, d) for d in decisions if _placed(d)}
    found: dict[str, Unbound] = {}
    for decision in decisions:
        if not _placed(decision) or decision.block.kind is BlockKind.SIGNATURE:
            continue
        others = {n for key, names in mine.items() if key != decision.block.id for n in names}
        gone = _taken_binds(code, decision) - mine[decision.block.id] - bound - others
        for stmt, reads in kept:
            if not reads & gone:
                continue
            by = _kept_by(code, stmt, decisions)
            if by or (old is not None and stmt.key not in old):
                found[decision.block.id] = Unbound(min(reads & gone), stmt, by)
                break
    return found


def _binds(code: Reading, decision: Decision) -> frozenset[str]:
    """The names ``decision``'s code binds (a header edit's: its header's)."""
    if decision.block.kind is not BlockKind.HEADER:
        return binds(code.flows, decision)
    text = decision.code if decision.code is not None else decision.block.code
    nodes = code.syntax.parsed(with_body(text))
    return names_of(nodes, header_only=True)[1] if nodes is not None else frozenset()


def _taken_binds(code: Reading, decision: Decision) -> frozenset[str]:
    """The plain locals the upstream statements ``decision`` takes out bind (a header
    edit's: the header's alone)."""
    assert decision.slot is not None
    held = decision.slot.held()
    if decision.block.kind is BlockKind.HEADER:
        names = _own_writes(code.syntax, held[0]) if held else frozenset()
    else:
        names = frozenset(n for s in nested(held) for n in s.writes)
    return frozenset(n for n in names if "." not in n)


def _placed(decision: Decision) -> bool:
    """Whether ``decision`` puts its block's code in the output."""
    return not decision.conflict and not decision.follow and decision.slot is not None


def _kept_by(code: Reading, stmt: Stmt, decisions: Sequence[Decision]) -> tuple[str, ...]:
    """The conflicts of ``decisions`` that would replace ``stmt``: at their shown place, or
    by what they replaced in their base."""
    found = []
    for decision in decisions:
        if not decision.conflict or decision.block.kind is BlockKind.HEADER:
            continue
        shown = nested(decision.slot.held()) if decision.slot is not None else []
        alike = code.places.resembling(decision.block.anchor.replaced)
        if any(s is stmt for s in (*shown, *alike)):
            found.append(decision.block.id)
    return tuple(found)


def _output(code: Reading, decisions: Sequence[Decision]) -> _Output | None:
    """None when some block's code does not parse: what it reads is unknown."""
    removed: dict[int, str] = {}
    blocks: set[str] = set()
    for decision in decisions:
        block = decision.block
        if block.kind is BlockKind.SIGNATURE:
            continue
        if not decision.follow:
            text = decision.code if decision.code is not None else block.code
            if block.kind is BlockKind.HEADER:
                text = with_body(text)
            flow = code.flows.flow_of(text)
            if flow is None:
                return None
            blocks |= flow.reads
        if decision.conflict or decision.follow or decision.slot is None:
            continue
        held = decision.slot.held()
        # A header edit replaces the header alone: the body stays upstream's.
        taken = held[:1] if block.kind is BlockKind.HEADER else nested(held)
        removed.update((id(s), block.id) for s in taken)
    upstream = tuple((s, _own_reads(code.syntax, s)) for s in _statements(code.places))
    return _Output(removed, upstream, frozenset(blocks))


def _statements(places: Places) -> Iterator[Stmt]:
    for _, suite in places.index.suites:
        yield from suite.stmts


def _own_reads(syntax: Syntax, stmt: Stmt) -> frozenset[str]:
    """The names ``stmt`` reads, a compound one in its header alone (all of them when the
    header does not parse: more readers keep more upstream code)."""
    if not stmt.clauses:
        return stmt.reads
    nodes = syntax.parsed(syntax.source([stmt]))
    # ``elif`` tests, ``with`` items, decorators and defaults are the header's too.
    return names_of(nodes, header_only=True)[0] if nodes is not None else stmt.reads


def _own_writes(syntax: Syntax, stmt: Stmt) -> frozenset[str]:
    """The names ``stmt`` binds, a compound one in its header alone (all of them when the
    header does not parse)."""
    if not stmt.clauses:
        return stmt.writes
    nodes = syntax.parsed(syntax.source([stmt]))
    return names_of(nodes, header_only=True)[1] if nodes is not None else stmt.writes


def _removers(output: _Output, dead: dict[int, Stmt], stmt: Stmt) -> tuple[str, ...]:
    """The blocks that took out upstream's readers of what ``stmt`` binds, through unread
    readers too."""
    found: list[str] = []
    seen: set[int] = set()
    pending = [stmt]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        for reader, reads in output.upstream:
            if reader is current or not reads & current.writes:
                continue
            if id(reader) in dead:
                pending.append(reader)
            elif output.removed.get(id(reader), "") not in ("", *found):
                found.append(output.removed[id(reader)])
    return tuple(found)
