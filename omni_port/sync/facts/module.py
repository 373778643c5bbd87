"""The facts of one runner module: what the facts of each of its copied members are built
from, the same for sync, ``resolve`` and the upgrade summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from omni_port.model import Block, Chunk, Copy, ModulePatches, PatchSet, Release, Stmt, Upstream
from omni_port.pyast.fields import Fields
from omni_port.pyast.syntax import find_member
from omni_port.sync.evidence import catalog, history, runs
from omni_port.sync.evidence.catalog import Constraint
from omni_port.sync.evidence.history import MemberHistory, MemberKey
from omni_port.sync.facts.member import Inputs, MemberFacts


@dataclass(frozen=True)
class ModuleFacts:
    """What the facts of every copied member of one runner module are built from."""

    module: ModulePatches
    upstream: Upstream
    #: Catalog constraints by block id, as the catalog's Location lines state them.
    constraints: Mapping[str, Constraint] = field(default_factory=dict)
    #: What marked blocks of the whole patch set replace and hold (``declared``).
    declared: Declared = field(default_factory=lambda: Declared())
    #: The records the sync's output defines, with their fields in order (``pyast.fields``).
    fields: Fields = ()

    @classmethod
    def build(
        cls,
        module: ModulePatches,
        upstream: Upstream,
        locations: Mapping[str, str] | None = None,
        declared: Declared | None = None,
        fields: Fields = (),
    ) -> ModuleFacts:
        """The module's inputs; ``locations`` are the catalog's ``Location:`` lines by id,
        ``declared`` what the patch set's marked blocks replace and hold (``declared``),
        ``fields`` the records the output defines."""
        parsed = {ident: catalog.parse(text) for ident, text in (locations or {}).items()}
        return cls(module, upstream, parsed, declared or Declared(), fields)

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
        constraints = {b.id: self.constraints[b.id] for b in blocks if b.id in self.constraints}
        # A Location line the block's own release breaks is stale: it says nothing here.
        stale = frozenset(
            ident
            for b in blocks
            if (ident := b.id) in constraints and not catalog.held(constraints[ident], b, base)
        )
        upgrade = self.module.base_sha256 != self.upstream.sha256
        key = (copy.upstream_owner, copy.upstream_name)
        declared = self.declared.replaced.get(key, {})
        marked = tuple(b for b in blocks if b.marked)
        inputs = Inputs(
            self.upstream.tree,
            past,
            constraints,
            stale,
            upgrade,
            self._attributes,
            declared,
            marked,
            self.declared.code.get(key, frozenset()),
            self.fields,
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
        key = (upstream_owner(copy, upstream), copy.upstream_name)
        return history.member_history(upstream.history, module.base, target, upstream.tree, key)


@dataclass(frozen=True, slots=True)
class Declared:
    """What the marked blocks of every runner of a patch set declare omni's, by the
    upstream member (class, name) their copy comes from."""

    #: Each run of upstream statements a marked block replaces, with the block's id: an
    #: unmarked edit of the same statements in another runner is omni's by that
    #: declaration (the intent rule reads it).
    replaced: Mapping[MemberKey, Mapping[tuple[str, ...], str]] = field(default_factory=dict)
    #: The keys of every statement of marked blocks' code (nested ones included, a compound
    #: one by its header): code a runner holds unmarked that another runner marks is
    #: omni's too, and dates nothing of the runner's lineage (``evidence.history.never_had``).
    code: Mapping[MemberKey, frozenset[str]] = field(default_factory=dict)


def declared(patches: PatchSet) -> Declared:
    """What the marked blocks of every runner of ``patches`` replace and hold, by the
    upstream member their copy comes from."""
    replaced: dict[MemberKey, dict[tuple[str, ...], str]] = {}
    code: dict[MemberKey, set[str]] = {}
    for module in patches.modules:
        copies = {(p.owner, p.name): p for p in module.pieces if isinstance(p, Copy)}
        for piece in module.pieces:
            if not isinstance(piece, Block) or not piece.marked:
                continue
            copy = copies.get((piece.owner, piece.member))
            if copy is None:
                continue
            key = (copy.upstream_owner, copy.upstream_name)
            code.setdefault(key, set()).update(history.every_key(piece.code) or ())
            if piece.anchor.replaced:
                member = replaced.setdefault(key, {})
                member.setdefault(tuple(piece.anchor.replaced), piece.id)
    return Declared(replaced, {key: frozenset(keys) for key, keys in code.items()})


def upstream_owner(copy: Copy, upstream: Upstream) -> str:
    """The upstream class ``copy`` comes from ("" at module level): the upstream's own
    runner class when it names one (``--upstream-class``)."""
    if copy.upstream_owner and upstream.class_name:
        return upstream.class_name
    return copy.upstream_owner
