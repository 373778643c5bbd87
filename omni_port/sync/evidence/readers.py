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
