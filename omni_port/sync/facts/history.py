"""The history provider: what upstream history says about a copied member and its blocks
(the release the blocks were extracted against, which release changed or took out what a
block replaced, an edit upstream history explains as upstream's own code)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property

from omni_port.model import Block, BlockKind, Stmt, Tree
from omni_port.pyast.syntax import full_key, split_full_key, walk
from omni_port.sync.evidence import code, history, older_code, tied
from omni_port.sync.evidence.history import Explained, MemberHistory, Rebase, Version, Walked
from omni_port.sync.evidence.older_code import OlderCode
from omni_port.sync.evidence.places import ACCEPT, Index, Scored, Slot, index_of, score_all
from omni_port.sync.facts.once import PerBlock
from omni_port.sync.facts.places import Places
from omni_port.sync.facts.syntax import Syntax


class History:
    """One copied member across upstream history, and its blocks there; without history
    (``past`` None) every fact says nothing."""

    def __init__(
        self,
        past: MemberHistory | None,
        member: Stmt,
        tree: Tree,
        syntax: Syntax,
        places: Places,
        omni_code: frozenset[str] = frozenset(),
    ) -> None:
        #: The member across upstream history (None without history, or without the base).
        self.past = past
        #: The keys of statements marked blocks of any runner hold here: omni's code.
        self.omni_code = omni_code
        self._member = member
        self._tree = tree
        self._syntax = syntax
        self._places = places
        self.explained = PerBlock(self._explained)
        self.explained_place = PerBlock(self._explained_place)
        self.rebase = PerBlock(self._rebase)
        self.older_code = PerBlock(self._older_code)
        self.base_text = PerBlock(self._base_text)
        self.replaced_text = PerBlock(self._replaced_text)
        self.changed_by = PerBlock(self._changed_by)
        self.place_changed_by = PerBlock(self._place_changed_by)
        self.moved_only = PerBlock(self._moved_only)
        self.removed_by = PerBlock(self._removed_by)
        self.arrived_in = PerBlock(self._arrived_in)
        self.stood_against = PerBlock(self._stood_against)
        self.never_had = PerBlock(self._never_had)
        self.never_without = PerBlock(self._never_without)
        self.unordered = PerBlock(self._unordered)
        self.walked = PerBlock(self._walked)
        self.base_place = PerBlock(self._base_place)

    # --- the member --------------------------------------------------------------------------

    @property
    def target(self) -> str:
        """The new upstream's label in upstream history ("" without history)."""
        past = self.past
        return past.versions[past.target].label if past is not None else ""

    @cached_property
    def base(self) -> Version | None:
        """The member in the release the blocks were extracted against (None without
        history)."""
        past = self.past
        return past.versions[past.base] if past is not None else None

    @cached_property
    def base_keys(self) -> frozenset[str] | None:
        """The keys of the statements of the base's member, in any body (None when the base
        or its member is unknown)."""
        base = self.base
        if base is None or base.member is None:
            return None
        return frozenset(s.key for _, suite in walk(base.member.clauses[0]) for s in suite.stmts)

    @cached_property
    def older(self) -> tuple[Version, ...]:
        """The releases before the base that hold the member, newest first."""
        past = self.past
        if past is None:
            return ()
        return tuple(v for v in reversed(past.versions[: past.base]) if v.member is not None)

    def named(self, label: str) -> str:
        """The release ``label``, or the commit with its hash, subject and pull request."""
        past = self.past
        return history.named(past, label) if past is not None else label

    def is_commit(self, label: str) -> bool:
        """Whether ``label`` is a commit of a clone (one upstream change), not a release."""
        past = self.past
        return past is not None and history.is_commit(past, label)

    def older_than_base(self, release: str) -> bool:
        """Whether ``release`` comes before the base in upstream history."""
        past = self.past
        return past is not None and history.older_than_base(past, release)

    @cached_property
    def dropped_locals(self) -> dict[str, str]:
        """Local names (no attributes) the base's member binds that the new upstream's binds
        nowhere (its parameters included), each with the release or commit after the base
        whose member first binds it nowhere: code of omni's that reads one has lost what it
        read."""
        past = self.past
        if past is None:
            return {}
        now = self._places.bound
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
            for path, suite in index_of(base.member).suites
            for stmt in suite.stmts
            if name in stmt.writes
        ]
        if len(binders) != 1 or binders[0][0] or binders[0][1].kind != "Assign":
            return None
        text = code.source(base.tree, [binders[0][1]])
        nodes = self._syntax.parsed(text)
        chain = _chain(nodes[0]) if nodes and len(nodes) == 1 else None
        if chain is None or chain[0] != name:
            return None
        value = chain[1]
        root = value.split(".")[0]
        if root != "self" and root not in self._places.parameters:
            return None
        prefixes = {".".join(value.split(".")[:n]) for n in range(1, value.count(".") + 2)}
        rebound = any(
            stmt.writes & prefixes for _, suite in self._places.index.suites for stmt in suite.stmts
        )
        read = re.compile(r"(?<![\w.])" + re.escape(value) + r"(?!\w)")
        lines = (line for line in self._tree.lines if not line.lstrip().startswith("#"))
        if rebound or not any(read.search(line) for line in lines):
            return None
        return text

    # --- a block -----------------------------------------------------------------------------

    def _explained(self, block: Block) -> Explained | None:
        """Upstream history's explanation of an unmarked edit as upstream code (None when
        there is none, or no history)."""
        past = self.past
        if block.marked or past is None:
            return None
        return history.explain(block, past) or history.held_in_member(block, past)

    def _explained_place(self, block: Block) -> Scored:
        """Where the new upstream holds its own statements at the place of the edit
        upstream history explains (``explained``): one run of them the member holds once,
        else the place the edit's anchor finds; the member's start when it has nothing
        there (following it leaves nothing)."""
        found = self.explained(block)
        span = found.target_span if found is not None else ()
        slot = _followed_slot(self._places.index, block, span)
        return Scored(slot or Slot(self._member.clauses[0], (), 0, 0), 1.0, 1.0)

    def _rebase(self, block: Block) -> Rebase | None:
        """The older release an edit was written against, when not the base."""
        past = self.past
        if past is None or not block.anchor.replaced:
            return None
        return history.merge_base(block, past)

    def _older_code(self, block: Block) -> OlderCode | None:
        """The older revision's code an unmarked edit holds beside omni's own statements
        (``evidence.older_code``; None when it holds none, or without history)."""
        past = self.past
        return older_code.older_code(block, past) if past is not None else None

    def _base_text(self, block: Block) -> str | None:
        """The base release's code of the statements the block replaced (None when
        unknown, or without history)."""
        past = self.past
        return history.base_text(block, past) if past is not None else None

    def _replaced_text(self, block: Block) -> str | None:
        """The code the block replaced, as the old upstream wrote it (a header's with a
        stand-in body): the base release's text, else the anchor's record of it; None
        when neither tells (statements recorded with their bodies' fingerprint)."""
        header = block.kind is BlockKind.HEADER
        text = self.base_text(block)
        if text is None:
            keys = []
            for key in block.anchor.replaced:
                head, digest = split_full_key(key)
                if digest:
                    return None
                keys.append(head)
            text = "\n".join(keys)
        return code.with_body(text) if header else text

    def _changed_by(self, block: Block) -> str:
        """The release or commit after the base that first edited what the block replaced
        (a change that only moved it is no edit), as notes name it ("" when none did, or
        without history)."""
        past = self.past
        found = history.edited_by(block, past) if past is not None else ""
        return self.named(found) if found else ""

    def _place_changed_by(self, block: Block) -> str:
        """The release or commit after the base that first changed the block's place (code
        put between its neighbours, or what it replaced edited), as notes name it ("" when
        none did, or without history)."""
        past = self.past
        found = history.place_changed_by(block, past) if past is not None else ""
        return self.named(found) if found else ""

    def _moved_only(self, block: Block) -> bool:
        """Whether upstream changed only the place of what the block replaced, not its text
        (False without history)."""
        past = self.past
        return past is not None and history.moved_only(block, past)

    def _removed_by(self, block: Block) -> str:
        """The release or commit after the base that took the statements the block replaced
        out of the member: the first that changed them at their place, when the new
        upstream holds none of them anywhere, not even edited ("" otherwise, or without
        history)."""
        past = self.past
        replaced = block.anchor.replaced
        if past is None or not replaced:
            return ""
        if self._places.resembling(replaced):
            return ""
        return history.changed_by(block, past)

    def _arrived_in(self, block: Block) -> str:
        """The release or commit that brought what the block replaced to its place ("" when
        unknown, or without history)."""
        past = self.past
        return history.arrived_in(block, past) if past is not None else ""

    def _stood_against(self, block: Block) -> history.StoodAgainst:
        """The releases or commits omni's code kept at the block's place stands against:
        those that brought what it replaces there, and those that took out upstream code
        it still holds (none without history)."""
        past = self.past
        return history.stood_against(block, past) if past is not None else history.StoodAgainst()

    def post_dates(self, block: Block, change: str) -> str:
        """The newest change after ``change`` that brought upstream text an unmarked edit's
        code holds: its place's text was copied after ``change`` ("" when none, or without
        history; ``evidence.history.post_dates``)."""
        past = self.past
        return history.post_dates(block, past, change) if past is not None else ""

    def tied_by(self, change: str, followed: Block, kept: Block) -> frozenset[str]:
        """The names release ``change`` brought into the member that both the new
        upstream's code at ``followed``'s place (a lag the output follows) and the base's
        code ``kept`` replaced read or bind: they tie the two hunks into one change (none
        without history; ``evidence.tied``)."""
        past = self.past
        found = self.explained(followed)
        new = tied.brought_names(past, change) if past is not None else frozenset()
        if past is None or found is None or not new:
            return frozenset()
        here = tied.names_at(past.versions[past.target], found.target_span)
        return new & here & tied.names_at(past.versions[past.base], kept.anchor.replaced)

    def _never_had(self, block: Block) -> history.NeverHad | None:
        """Statements the block replaces that the runners never had at its place (None
        when none, or without history)."""
        past = self.past
        return history.never_had(block, past, self.omni_code) if past is not None else None

    def brought_here(self, block: Block, heads: Sequence[str]) -> tuple[history.Brought, ...]:
        """The change that brought the text of each statement keyed ``heads`` (own keys)
        that the base holds at the block's place, and any later one that only moved it
        there (none without history)."""
        past = self.past
        if past is None:
            return ()
        return history.brought_here(past, heads, block.anchor.path, 0)

    def brought_now(
        self, heads: Sequence[str], path: tuple[str, ...]
    ) -> tuple[history.Brought, ...]:
        """The change that brought the text of each statement keyed ``heads`` that the new
        upstream holds in the body at ``path``, and any later one that only moved it
        there (none without history)."""
        past = self.past
        if past is None:
            return ()
        return history.brought_here(past, heads, path, 0, past.target)

    def which_brought(self, brought: Sequence[history.Brought]) -> str:
        """Statements with the changes that brought them, for a note (``which_brought``)."""
        past = self.past
        oldest = past.versions[0].label if past is not None else ""
        return history.which_brought(brought, self.named, oldest)

    def base_text_without(self, block: Block, keys: frozenset[str]) -> str:
        """The base's code of the statements the block replaced, less those keyed ``keys``
        (the anchor's record of them when the base does not hold them there)."""
        found, base = self.base_place(block), self.base
        text = self.base_text(block)
        if not keys and text is not None:
            return text
        if found is None or base is None:
            replaced = block.anchor.replaced
            return "\n".join(k for k in replaced if split_full_key(k)[0] not in keys) + "\n"
        stmts = [s for s in found.stmts() if s.key not in keys]
        return "".join(code.source(base.tree, [s]) for s in stmts)

    def lag_run(
        self, lag: Block, release: str, stmts: Sequence[Stmt], path: tuple[str, ...]
    ) -> int:
        """How many of the new upstream's ``stmts`` (in the body at ``path``, nearest to
        the edit ``lag`` first) are upstream's version of its code, an older ``release``'s,
        or came with it (``evidence.history.lag_run``; 0 without history)."""
        past = self.past
        return history.lag_run(past, lag.code, release, stmts, path) if past is not None else 0

    def _never_without(self, block: Block) -> bool:
        """No release before the base had the runner's text where the deletion is."""
        past = self.past
        return past is not None and history.never_without(block, past)

    def _unordered(self, block: Block) -> history.Unordered | None:
        """What an unmarked edit deletes that came with the runner's text around it in one
        release, which releases alone cannot order (None when nothing, or a commit, or
        without history)."""
        past = self.past
        return history.unordered(block, past, self.omni_code) if past is not None else None

    def _walked(self, block: Block) -> Walked | None:
        """The block's place followed release by release through upstream history."""
        past = self.past
        return history.walked(block, past) if past is not None else None

    def _base_place(self, block: Block) -> history.Place | None:
        """The statements the block replaced, where the base holds them (None when the
        base lacks them there, or without history)."""
        base = self.base
        if base is None or base.member is None:
            return None
        found = history.place(base, block.anchor)
        return found if found is not None and found.keys() == block.anchor.replaced else None


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
        score_all(index, replace(block, kind=BlockKind.INSERTION)), key=lambda s: -s.score
    )
    if not scored or scored[0].score < ACCEPT:
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


def _locals(member: Stmt) -> frozenset[str]:
    """The names ``member`` binds anywhere in its body, and its parameters."""
    index = index_of(member)
    bound = {n for _, suite in index.suites for s in suite.stmts for n in s.writes}
    return frozenset(bound | set(code.parameters(member.key)))
