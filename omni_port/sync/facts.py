"""The facts the placement rules read: everything about a copied member and its blocks,
worked out once per sync from the inputs.

``MemberFacts`` is one copied member in the new upstream, with what is known about it
besides its code: upstream history, the catalog's constraints, whether the sync is an
upgrade. ``BlockFacts`` is one block in it: its code parsed once (flow, statements), its
ranked places, its counterpart's place, and what upstream history says about it. Each
fact is worked out the first time a rule asks and kept in the facts object, the explicit
scope of one sync (as LibCST's metadata wrapper resolves each provider once): nothing is
kept past the sync, and nothing is worked out that no rule asks for.

sync, ``resolve`` and the upgrade summary build the same facts (``member_facts``), so a
block is decided the same way by each of them.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from omni_port.model import (
    Block,
    BlockKind,
    Chunk,
    Copy,
    ModulePatches,
    PatchSet,
    Release,
    Stmt,
    Suite,
    Tree,
    Upstream,
)
from omni_port.pyast.diff import similarity
from omni_port.pyast.packages import call_counts, call_statements
from omni_port.pyast.syntax import (
    dedent_code,
    find_member,
    full_key,
    header_end,
    is_compound,
    simple_key,
    split_full_key,
    walk,
)
from omni_port.sync.evidence import catalog, code, flow, history, places, runs
from omni_port.sync.evidence.catalog import Constraint
from omni_port.sync.evidence.flow import Flow
from omni_port.sync.evidence.history import Explained, MemberHistory, Rebase, Version, Walked
from omni_port.sync.evidence.places import Index, Scored, Slot

__all__ = [
    "BlockFacts",
    "Declared",
    "Inputs",
    "MemberFacts",
    "ModuleFacts",
    "Stmt",
    "Suite",
    "Tree",
    "declared",
    "keys_of",
    "split_full_key",
    "upstream_owner",
]


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the facts of a member are worked out from, besides the member itself."""

    #: The new upstream module.
    tree: Tree
    #: The member across upstream history; None without history (or without the base in it).
    history: MemberHistory | None = None
    #: Catalog constraints, by block id.
    constraints: Mapping[str, Constraint] = field(default_factory=dict)
    #: The new upstream is not the base the patches were extracted against. Onto that
    #: base, a sync reproduces the runner as it is: a disagreement between omni's records
    #: that no upstream change brought is left to the next upgrade to raise.
    upgrade: bool = True
    #: The attributes the releases of history and omni's own code assign (None without
    #: history), for whether a block's code runs at a place.
    attributes: runs.Attributes | None = field(default=None, compare=False)
    #: Upstream statements of this member that a marked block of the patch set (in any
    #: runner) replaces, as the block's replaced keys, with that block's id: omni declared
    #: them its own.
    declared: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    #: The member's marked blocks (what their code binds is omni's: ``marked_binds``).
    marked: tuple[Block, ...] = ()


class MemberFacts:
    """One copied member in the new upstream, and the facts of its blocks."""

    def __init__(self, member: Stmt, inputs: Inputs) -> None:
        #: The member in the new upstream (a method, or a module-level class or function).
        self.member = member
        self.inputs = inputs
        #: Every body of the member and every statement's place in it.
        self.index = places.index_of(member)
        self._blocks: dict[int, tuple[Block, BlockFacts]] = {}
        self._flows: dict[str, Flow | None] = {}
        self._at: dict[tuple[int, int, int], Flow | None] = {}
        self._parsed: dict[str, list[ast.stmt] | None] = {}
        self._statements: dict[str, list[str] | None] = {}

    @property
    def tree(self) -> Tree:
        """The new upstream module, for the text of its statements."""
        return self.inputs.tree

    @property
    def upgrade(self) -> bool:
        return self.inputs.upgrade

    def of(self, block: Block) -> BlockFacts:
        """The facts of ``block`` (worked out once per block object)."""
        kept = self._blocks.get(id(block))
        if kept is not None and kept[0] is block:
            return kept[1]
        found = BlockFacts(self, block)
        self._blocks[id(block)] = (block, found)
        return found

    @cached_property
    def _alone(self) -> MemberFacts:
        return MemberFacts(self.member, replace(self.inputs, history=None))

    def without_history(self) -> MemberFacts:
        """The same member, as if upstream history said nothing (its facts worked out once)."""
        return self._alone if self.inputs.history is not None else self

    # --- the new upstream's code ------------------------------------------------------------

    def source(self, stmts: Sequence[Stmt], header: bool = False) -> str:
        """The dedented upstream code of ``stmts`` (a compound header alone with ``header``)."""
        return code.source(self.tree, stmts, header)

    def flow_of(self, text: str) -> Flow | None:
        """The data flow of some code (None when it does not parse), kept per text."""
        if text not in self._flows:
            nodes = self.parsed(text)
            self._flows[text] = flow.flow(nodes) if nodes is not None else None
        return self._flows[text]

    def flow_at(self, slot: Slot) -> Flow | None:
        """The data flow of the upstream statements ``slot`` spans (None for none)."""
        key = slot.key()
        if key not in self._at:
            stmts = slot.held()
            self._at[key] = self.flow_of(self.source(stmts)) if stmts else None
        return self._at[key]

    def bound_by(self, slot: Slot) -> frozenset[str]:
        """Names the upstream statements at ``slot`` bind."""
        found = self.flow_at(slot)
        return found.writes if found is not None else frozenset()

    @cached_property
    def marked_binds(self) -> dict[str, str]:
        """Names the member's marked blocks bind, each with the first such block's id."""
        found: dict[str, str] = {}
        for block in self.inputs.marked:
            bound = self.of(block).flow
            for name in sorted(bound.writes if bound is not None else ()):
                found.setdefault(name, block.id)
        return found

    def read_after(self, slot: Slot, taken: Sequence[tuple[int, int]] = ()) -> frozenset[str]:
        """Names that statements after ``slot``'s statements read, other than those in the
        line ranges ``taken``."""
        return code.read_after(self.member, slot, taken)

    def verdict(self, mine: Flow, new: Sequence[Stmt], start: Slot) -> flow.Verdict | None:
        """What data flow says about a block (``mine``) and new upstream code from ``start``."""
        nodes = self.parsed(self.source(new))
        if nodes is None:
            return None
        bound = code.bound_before(self.member, start, self._parameters)
        return flow.side(mine, flow.flow(nodes), bound)

    @cached_property
    def _parameters(self) -> frozenset[str]:
        return frozenset(code.parameters(self.member.key))

    @cached_property
    def _place(self) -> runs.Place:
        local = frozenset(
            n for _, suite in self.index.suites for s in suite.stmts for n in s.writes
        )
        return runs.Place(self.member, self.index, local | self._parameters, self._parameters)

    def why_not(self, block: Block, slot: Slot, taken: Sequence[tuple[int, int]] = ()) -> str:
        """Why ``block``'s code would not run at ``slot`` ("" when it would): it reads a
        name nothing binds before it or an attribute nothing assigns any more, or it takes
        away a binding upstream's later code reads, other than code at the line ranges
        ``taken`` (what the member's other blocks replace or delete in the runner)."""
        mine = self.of(block).flow
        if mine is None:
            return ""
        return runs.why_not(self._place, mine, slot, self.inputs.attributes, taken)

    def taken_by(self, blocks: Sequence[Block]) -> tuple[tuple[int, int], ...]:
        """The line ranges of the new upstream's statements that ``blocks`` replace or
        delete, a compound one with its body."""
        keys = [k for b in blocks if b.kind is not BlockKind.HEADER for k in b.anchor.replaced]
        return tuple((stmt.start, stmt.full_end) for stmt in self.resembling(keys))

    def resembling(self, keys: Sequence[str]) -> list[Stmt]:
        """The statements of the new member, in any body, of the kind of a statement keyed
        in ``keys`` and alike to it as the anchor tells one statement edited from another."""
        heads = {(split_full_key(key)[0], code.kind_of(key)) for key in keys}
        return [
            stmt
            for _, suite in self.index.suites
            for stmt in suite.stmts
            if any(
                stmt.kind == kind and similarity(head, stmt.key) >= places.FUZZY
                for head, kind in heads
            )
        ]

    @cached_property
    def _module_simple(self) -> tuple[Stmt, ...]:
        """Every simple statement of the new upstream module, in any body."""
        return tuple(s for _, suite in walk(self.tree.body) for s in suite.stmts if not s.clauses)

    def held_in_module(self, text: str) -> bool:
        """Whether a simple statement of ``text`` (in a compound one's bodies too) stands
        anywhere in the new upstream module, edited no further than the anchor still calls
        it the same: what upstream took out of the member may live on elsewhere (moved
        into a helper the member calls). True when ``text`` does not parse."""
        nodes = self.parsed(text)
        if nodes is None:
            return True
        leaves = [
            (type(n).__name__, simple_key(n))
            for top in nodes
            for n in ast.walk(top)
            if isinstance(n, ast.stmt) and not is_compound(n)
        ]
        return any(
            stmt.kind == kind and similarity(key, stmt.key) >= places.FUZZY
            for kind, key in leaves
            for stmt in self._module_simple
        )

    def makes_calls(self, stmts: Sequence[Stmt]) -> bool:
        """Whether upstream's ``stmts`` call anything (True when they do not parse)."""
        if not stmts:
            return False
        nodes = self.parsed(self.source(stmts))
        return nodes is None or any(isinstance(n, ast.Call) for top in nodes for n in ast.walk(top))

    def parsed(self, text: str) -> list[ast.stmt] | None:
        """The statements of some code as ``ast`` reads them (None when it does not
        parse), kept per text."""
        if text not in self._parsed:
            self._parsed[text] = code.parsed(text)
        return self._parsed[text]

    def same_code(self, mine: str, theirs: str) -> bool:
        """Whether two pieces of code are the same statements, compared as syntax trees
        (an empty deletion is the same as nothing), each read once."""
        found = self._dumps(mine)
        return found is not None and found == self._dumps(theirs)

    def _dumps(self, text: str) -> list[str] | None:
        if text not in self._statements:
            nodes = self.parsed(text)
            self._statements[text] = [ast.dump(n) for n in nodes] if nodes is not None else None
        return self._statements[text]

    # --- call statements, which run twice when a moved call stays at both places ---------

    def calls(self, text: str) -> Counter[str]:
        """The call statements of some code, counted (none when it does not parse)."""
        nodes = self.parsed(text)
        return call_counts(nodes) if nodes is not None else Counter()

    def call_code(self, text: str, key: str) -> str:
        """The call statement of some code that ``calls`` counts under ``key``, as code."""
        nodes = self.parsed(text) or []
        found = next((s for s in call_statements(nodes) if ast.dump(s) == key), None)
        return ast.unparse(found) if found is not None else "a call"

    @cached_property
    def upstream_calls(self) -> Counter[str]:
        """The call statements of the member's body in the new upstream."""
        return self.calls(self.source(self.member.clauses[0].stmts))

    def calls_changed_by(self, key: str) -> str:
        """The first release or commit after the base whose member runs the call ``key`` a
        different number of times than the base's, as notes name it ("" when none, or
        without history)."""
        past = self.inputs.history
        if past is None:
            return ""
        counts = [
            self.calls(code.source(v.tree, v.member.clauses[0].stmts))[key]
            if v.member is not None
            else 0
            for v in past.versions[past.base : past.target + 1]
        ]
        changed = next((i for i, n in enumerate(counts) if n != counts[0]), None)
        return self.named(past.versions[past.base + changed].label) if changed else ""

    def runner_calls(self, blocks: Sequence[Block]) -> Counter[str] | None:
        """The call statements of the old runner's member: the base's, less what
        ``blocks`` replaced, plus the blocks' own. None without the base, or when the base
        code of what a block replaced is unknown."""
        base = self.base
        if base is None or base.member is None:
            return None
        counts = self.calls(code.source(base.tree, base.member.clauses[0].stmts))
        for block in blocks:
            if block.kind is BlockKind.HEADER:
                continue  # a compound header holds no call statement, and keeps its body
            if block.anchor.replaced:
                replaced = self.of(block).replaced_text
                if replaced is None:
                    return None
                counts -= self.calls(replaced)
            counts += self.calls(block.code)
        return counts

    def echo(self, block: Block, new: Sequence[Stmt]) -> Stmt | None:
        """A new upstream statement among ``new`` that nearly repeats one of the block's."""
        mine = self.parsed(block.code)
        return code.echo(mine, new, lambda s: self.source([s])) if mine is not None else None

    @cached_property
    def bridges(self) -> dict[str, str]:
        """Methods of the member's class that only return an expression, by name."""
        return code.bridges(self.tree, self.member)

    @cached_property
    def signature(self) -> str:
        """The member's upstream signature, made parseable with a stand-in body."""
        end = header_end(self.member)
        return code.with_body(dedent_code(self.tree.text(self.member.start, end)))

    # --- upstream history ---------------------------------------------------------------------

    @property
    def target(self) -> str:
        """The new upstream's label in upstream history ("" without history)."""
        past = self.inputs.history
        return past.versions[past.target].label if past is not None else ""

    @cached_property
    def base(self) -> Version | None:
        """The member in the release the blocks were extracted against (None without
        history)."""
        past = self.inputs.history
        return past.versions[past.base] if past is not None else None

    @cached_property
    def dropped_locals(self) -> dict[str, str]:
        """Local names (no attributes) the base's member binds that the new upstream's binds
        nowhere (its parameters included), each with the release or commit after the base
        whose member first binds it nowhere: code of omni's that reads one has lost what it
        read."""
        past = self.inputs.history
        if past is None:
            return {}
        now = self._place.local
        gone: dict[str, str] = {}
        for version in past.versions[past.base : past.target + 1]:
            if version.member is None:
                continue
            bound = _locals(version.member)
            if version is past.versions[past.base]:
                # An attribute may be assigned in another method: verify's concern.
                gone = dict.fromkeys(sorted(n for n in bound - now if "." not in n), "")
                continue
            for name in gone:
                gone[name] = gone[name] or ("" if name in bound else version.label)
        return {name: label for name, label in gone.items() if label}

    def carried(self, name: str) -> str | None:
        """The base's binding of the local ``name``, when a block that reads it may carry
        it as it stood (None otherwise): the base's member binds ``name`` once, in its own
        body, to a chain of attributes read from ``self`` or a parameter (no call, nothing
        it could change), which the new upstream module still reads and whose objects the
        new member rebinds nowhere. Upstream took the binding out of the member; its
        value is there for omni's code as it was."""
        base = self.base
        if base is None or base.member is None:
            return None
        binders = [
            (path, stmt)
            for path, suite in places.index_of(base.member).suites
            for stmt in suite.stmts
            if name in stmt.writes
        ]
        if len(binders) != 1 or binders[0][0] or binders[0][1].kind != "Assign":
            return None
        text = code.source(base.tree, [binders[0][1]])
        nodes = self.parsed(text)
        chain = _chain(nodes[0]) if nodes and len(nodes) == 1 else None
        if chain is None or chain[0] != name:
            return None
        value = chain[1]
        root = value.split(".")[0]
        if root != "self" and root not in self._parameters:
            return None
        prefixes = {".".join(value.split(".")[:n]) for n in range(1, value.count(".") + 2)}
        rebound = any(
            stmt.writes & prefixes for _, suite in self.index.suites for stmt in suite.stmts
        )
        read = re.compile(r"(?<![\w.])" + re.escape(value) + r"(?!\w)")
        lines = (line for line in self.tree.lines if not line.lstrip().startswith("#"))
        if rebound or not any(read.search(line) for line in lines):
            return None
        return text

    @cached_property
    def older(self) -> tuple[Version, ...]:
        """The releases before the base that hold the member, newest first."""
        past = self.inputs.history
        if past is None:
            return ()
        return tuple(v for v in reversed(past.versions[: past.base]) if v.member is not None)

    def named(self, label: str) -> str:
        """The release ``label``, or the commit with its hash, subject and pull request."""
        past = self.inputs.history
        return history.named(past, label) if past is not None else label

    def is_commit(self, label: str) -> bool:
        """Whether ``label`` is a commit of a clone (one upstream change), not a release."""
        past = self.inputs.history
        return past is not None and history.is_commit(past, label)

    def older_than_base(self, release: str) -> bool:
        """Whether ``release`` comes before the base in upstream history."""
        past = self.inputs.history
        return past is not None and history.older_than_base(past, release)


class BlockFacts:
    """One block of a copied member, with what the rules read about it."""

    def __init__(self, member: MemberFacts, block: Block) -> None:
        self.member = member
        self.block = block

    @property
    def declared_by(self) -> str:
        """The marked block (of another runner, the block being unmarked) that replaces the
        very statements this edit replaces: omni declared them its own there ("" for
        none)."""
        block = self.block
        if block.marked or not block.anchor.replaced:
            return ""
        return self.member.inputs.declared.get(tuple(block.anchor.replaced), "")

    @cached_property
    def built_on(self) -> tuple[tuple[str, str], ...]:
        """The names the unmarked edit's code reads that only marked blocks of the member
        bind (upstream binds them nowhere in the member), each with its block's id: omni's
        edit is built on omni's marked code, so it is omni's change too (none: empty)."""
        block, mine = self.block, self.flow
        if block.marked or block.kind is BlockKind.DELETION or mine is None:
            return ()
        upstream = self.member._place.local
        own = self.member.marked_binds
        return tuple((n, own[n]) for n in sorted(mine.reads) if n in own and n not in upstream)

    @property
    def constraint(self) -> Constraint | None:
        """The catalog's constraint on the block's place (None when it has none)."""
        return self.member.inputs.constraints.get(self.block.id)

    @cached_property
    def flow(self) -> Flow | None:
        """The data flow of the block's code (None when it does not parse)."""
        return self.member.flow_of(self.block.code)

    @cached_property
    def ranked(self) -> tuple[Scored, ...]:
        """Every place of the block in the new member, best first (the anchor's ranking)."""
        return tuple(places.ranked(self.member.index, self.block))

    def counterpart(self, floor: float) -> Scored | None:
        """The clear best place of the block's counterpart anchor (omni's GPU runner)
        scoring at least ``floor``; None without a counterpart or a clear place."""
        return self._counterparts.setdefault(floor, self._counterpart(floor))

    @cached_property
    def _counterparts(self) -> dict[float, Scored | None]:
        return {}

    def _counterpart(self, floor: float) -> Scored | None:
        if self.block.counterpart is None:
            return None
        ghost = replace(self.block, kind=BlockKind.INSERTION, anchor=self.block.counterpart)
        return places.clear_place(self.member.index, ghost, floor)

    # --- upstream history ---------------------------------------------------------------------

    @cached_property
    def explained(self) -> Explained | None:
        """Upstream history's explanation of an unmarked edit as upstream code (None when
        there is none, or no history)."""
        past = self.member.inputs.history
        if self.block.marked or past is None:
            return None
        return history.explain(self.block, past) or history.held_in_member(self.block, past)

    @cached_property
    def explained_place(self) -> Scored:
        """Where the new upstream holds its own statements at the place of the edit
        upstream history explains (``explained``): one run of them the member holds once,
        else the place the edit's anchor finds; the member's start when it has nothing
        there (following it leaves nothing)."""
        found = self.explained
        span = found.target_span if found is not None else ()
        slot = _followed_slot(self.member.index, self.block, span)
        return Scored(slot or Slot(self.member.member.clauses[0], (), 0, 0), 1.0, 1.0)

    @cached_property
    def rebase(self) -> Rebase | None:
        """The older release an edit was written against, when not the base."""
        past = self.member.inputs.history
        if past is None or not self.block.anchor.replaced:
            return None
        return history.merge_base(self.block, past)

    @cached_property
    def base_text(self) -> str | None:
        """The base release's code of the statements the block replaced (None when
        unknown, or without history)."""
        past = self.member.inputs.history
        return history.base_text(self.block, past) if past is not None else None

    @cached_property
    def replaced_text(self) -> str | None:
        """The code the block replaced, as the old upstream wrote it (a header's with a
        stand-in body): the base release's text, else the anchor's record of it; None
        when neither tells (statements recorded with their bodies' fingerprint)."""
        header = self.block.kind is BlockKind.HEADER
        text = self.base_text
        if text is None:
            keys = []
            for key in self.block.anchor.replaced:
                head, digest = split_full_key(key)
                if digest:
                    return None
                keys.append(head)
            text = "\n".join(keys)
        return code.with_body(text) if header else text

    @cached_property
    def changed_by(self) -> str:
        """The release or commit after the base that first changed what the block replaced,
        as notes name it ("" when none did, or without history)."""
        past = self.member.inputs.history
        found = history.changed_by(self.block, past) if past is not None else ""
        return self.member.named(found) if found else ""

    @cached_property
    def removed_by(self) -> str:
        """The release or commit after the base that took the statements the block replaced
        out of the member: the first that changed them at their place, when the new
        upstream holds none of them anywhere, not even edited ("" otherwise, or without
        history)."""
        past = self.member.inputs.history
        replaced = self.block.anchor.replaced
        if past is None or not replaced:
            return ""
        if self.member.resembling(replaced):
            return ""
        return history.changed_by(self.block, past)

    @cached_property
    def arrived_in(self) -> str:
        """The release or commit that brought what the block replaced to its place ("" when
        unknown, or without history)."""
        past = self.member.inputs.history
        return history.arrived_in(self.block, past) if past is not None else ""

    @cached_property
    def never_had(self) -> history.NeverHad | None:
        """Statements the block replaces that the runners never had at its place (None
        when none, or without history)."""
        past = self.member.inputs.history
        return history.never_had(self.block, past) if past is not None else None

    def base_text_without(self, keys: frozenset[str]) -> str:
        """The base's code of the statements the block replaced, less those keyed ``keys``
        (the anchor's record of them when the base does not hold them there)."""
        found, base = self.base_place, self.member.base
        if not keys and self.base_text is not None:
            return self.base_text
        if found is None or base is None:
            replaced = self.block.anchor.replaced
            return "\n".join(k for k in replaced if split_full_key(k)[0] not in keys) + "\n"
        stmts = [s for s in found.stmts() if s.key not in keys]
        return "".join(code.source(base.tree, [s]) for s in stmts)

    @cached_property
    def never_without(self) -> bool:
        """No release before the base had the runner's text where the deletion is."""
        past = self.member.inputs.history
        return past is not None and history.never_without(self.block, past)

    @cached_property
    def walked(self) -> Walked | None:
        """The block's place followed release by release through upstream history."""
        past = self.member.inputs.history
        return history.walked(self.block, past) if past is not None else None

    @cached_property
    def base_place(self) -> history.Place | None:
        """The statements the block replaced, where the base holds them (None when the
        base lacks them there, or without history)."""
        base = self.member.base
        if base is None or base.member is None:
            return None
        found = history.place(base, self.block.anchor)
        return found if found is not None and found.keys() == self.block.anchor.replaced else None


def _followed_slot(index: Index, block: Block, span: tuple[str, ...]) -> Slot | None:
    """The place of the new upstream's own statements ``span`` at a followed edit's place:
    where the member holds them as one run, when it does once; else by the edit's anchor."""
    runs = [
        Slot(suite, path, start, len(span))
        for path, suite in index.suites
        for start in range(len(suite.stmts) - len(span) + 1)
        if span and keys_of(suite.stmts[start : start + len(span)]) == span
    ]
    if len(runs) == 1:
        return runs[0]
    # The member holds the run more than once: the one in the body the edit was in.
    along = [run for run in runs if run.path == tuple(block.anchor.path)]
    if len(along) == 1:
        return along[0]
    scored = sorted(
        places.score_all(index, replace(block, kind=BlockKind.INSERTION)), key=lambda s: -s.score
    )
    if not scored or scored[0].score < places.ACCEPT:
        return None
    slot = scored[0].slot
    stmts = slot.suite.stmts
    for start in (slot.index, slot.index - len(span)):
        if start >= 0 and keys_of(stmts[start : start + len(span)]) == span:
            return Slot(slot.suite, slot.path, start, len(span))
    # The member holds the run more than once: the one in the body the anchor points into.
    here = [run for run in runs if run.suite is slot.suite]
    if len(here) == 1:
        return here[0]
    return Slot(slot.suite, slot.path, slot.index, 0)


def _chain(node: ast.stmt) -> tuple[str, str] | None:
    """``(name, value)`` of ``name = a.b.c``, a plain name bound to a chain of attribute
    reads off one name (None for anything else)."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target, value = node.targets[0], node.value
    if not isinstance(target, ast.Name) or not isinstance(value, ast.Attribute):
        return None
    inner: ast.expr = value
    while isinstance(inner, ast.Attribute):
        inner = inner.value
    if not isinstance(inner, ast.Name):
        return None
    return target.id, ast.unparse(value)


def keys_of(stmts: Sequence[Stmt]) -> tuple[str, ...]:
    """The full keys of ``stmts`` (a compound statement with its body's fingerprint)."""
    return tuple(full_key(s) for s in stmts)


# --- building the facts of a module -----------------------------------------------------------


@dataclass(frozen=True)
class ModuleFacts:
    """What the facts of every copied member of one runner module are built from."""

    module: ModulePatches
    upstream: Upstream
    #: Catalog constraints by block id, as the catalog's Location lines state them.
    constraints: Mapping[str, Constraint] = field(default_factory=dict)
    #: What marked blocks of the whole patch set replace (``declared``).
    declared: Declared = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        module: ModulePatches,
        upstream: Upstream,
        locations: Mapping[str, str] | None = None,
        declared: Declared | None = None,
    ) -> ModuleFacts:
        """The module's inputs; ``locations`` are the catalog's ``Location:`` lines by id,
        ``declared`` what the patch set's marked blocks replace (``declared``)."""
        parsed = {ident: catalog.parse(text) for ident, text in (locations or {}).items()}
        return cls(module, upstream, parsed, declared or {})

    def member(self, copy: Copy) -> Stmt | None:
        """``copy``'s member in the new upstream (None when it vanished)."""
        owner = upstream_owner(copy, self.upstream)
        return find_member(self.upstream.tree, owner, copy.upstream_name)

    def member_facts(self, copy: Copy, blocks: Sequence[Block]) -> MemberFacts | None:
        """The facts of ``copy``'s member and its ``blocks`` (None when it vanished): the
        same for sync, ``resolve`` and the upgrade summary."""
        member = self.member(copy)
        if member is None:
            return None
        past = self.history(copy)
        base = past.versions[past.base] if past is not None else None
        # A Location line the block's own release breaks is stale: it says nothing here.
        constraints = {
            b.id: self.constraints[b.id]
            for b in blocks
            if b.id in self.constraints and catalog.held(self.constraints[b.id], b, base)
        }
        upgrade = self.module.base_sha256 != self.upstream.sha256
        declared = self.declared.get((copy.upstream_owner, copy.upstream_name), {})
        marked = tuple(b for b in blocks if b.marked)
        inputs = Inputs(
            self.upstream.tree, past, constraints, upgrade, self._attributes, declared, marked
        )
        return MemberFacts(member, inputs)

    @cached_property
    def _attributes(self) -> runs.Attributes | None:
        upstream, module = self.upstream, self.module
        if not upstream.history or not module.base:
            return None
        texts = [(r.label, r.text) for r in upstream.history]
        if upstream.label not in dict(texts):
            texts.append((upstream.label, upstream.text))
        own = {p.id: p.code for p in module.pieces if isinstance(p, Block | Chunk)}
        return runs.Attributes(texts, module.base, upstream.label, runs.omni_assigned(own))

    def history(self, copy: Copy) -> MemberHistory | None:
        """The copied member across upstream history, when the patches' base is part of it."""
        upstream, module = self.upstream, self.module
        if not upstream.history or not module.base:
            return None
        target = Release(upstream.label, "")
        member = (upstream_owner(copy, upstream), copy.upstream_name)
        return history.member_history(upstream.history, module.base, target, upstream.tree, member)


#: Upstream statements marked blocks replace, by upstream member (class, name): each run of
#: replaced keys with the id of the block that replaces it.
Declared = Mapping[tuple[str, str], Mapping[tuple[str, ...], str]]


def declared(patches: PatchSet) -> Declared:
    """What the marked blocks of every runner of ``patches`` replace, by the upstream
    member their copy comes from: an unmarked edit of the same statements in another
    runner is omni's by that declaration (the intent rule reads it)."""
    found: dict[tuple[str, str], dict[tuple[str, ...], str]] = {}
    for module in patches.modules:
        copies = {(p.owner, p.name): p for p in module.pieces if isinstance(p, Copy)}
        for piece in module.pieces:
            if not isinstance(piece, Block) or not piece.marked or not piece.anchor.replaced:
                continue
            copy = copies.get((piece.owner, piece.member))
            if copy is None:
                continue
            member = found.setdefault((copy.upstream_owner, copy.upstream_name), {})
            member.setdefault(tuple(piece.anchor.replaced), piece.id)
    return found


def upstream_owner(copy: Copy, upstream: Upstream) -> str:
    """The upstream class ``copy`` comes from ("" at module level): the upstream's own
    runner class when it names one (``--upstream-class``)."""
    if copy.upstream_owner and upstream.class_name:
        return upstream.class_name
    return copy.upstream_owner


def _locals(member: Stmt) -> frozenset[str]:
    """The names ``member`` binds anywhere in its body, and its parameters."""
    index = places.index_of(member)
    bound = {n for _, suite in index.suites for s in suite.stmts for n in s.writes}
    return frozenset(bound | set(code.parameters(member.key)))
