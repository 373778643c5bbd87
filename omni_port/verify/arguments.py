"""Check 6: arguments and unpacking targets line up with the parameters and fields they fill.

Every call of a generated module whose definition can be read (a NamedTuple, a dataclass,
a class's ``__init__``, a method along the runner's bases, a function of the pinned
sources or of the module itself) is checked as Python would bind it: no more positional
arguments than positional parameters, no unknown keyword, no parameter given twice, no
required one left out, and no bare name passed at the position of a *different*
parameter of the same name (pylint's ``arguments-out-of-order``). A tuple unpacking of a
NamedTuple-typed value (``(...) = self.state``) has as many targets as the class has
fields, and a target named like a field stands at that field's position.

A copied NamedTuple or dataclass is compared with its upstream original: a field upstream
has and the copy lacks (or reorders) is reported at the class, and again at each
construction and unpacking that disagrees with upstream's fields, because the copied
calls and blocks were written against upstream's.

What cannot be resolved for certain is skipped, never guessed: a callee bound locally, an
attribute an instance assigns, a decorator that may change a signature, a class whose
bases cannot all be read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.model import Code, Finding
from omni_port.pyast.packages import Class, World, module_class
from omni_port.pyast.signatures import Param, Signature, record_fields
from omni_port.verify.callees import (
    Resolver,
    Scope,
    calls_and_unpackings,
    short,
    unpacking_targets,
)
from omni_port.verify.context import Context, Override, dotted_module


@dataclass(frozen=True, slots=True)
class _Site:
    """A call or an unpacking whose definition was resolved."""

    #: Generated module file name.
    path: str
    #: The call, or the assignment that unpacks.
    node: ast.Call | ast.Assign
    #: What its definition takes.
    signature: Signature

    @property
    def items(self) -> list[ast.expr]:
        """Positional arguments (up to a ``*args``) or unpacking targets (up to a ``*rest``)."""
        items = self.node.args if isinstance(self.node, ast.Call) else unpacking_targets(self.node)
        return list(_before_star(items))

    @property
    def starred(self) -> bool:
        items = self.node.args if isinstance(self.node, ast.Call) else unpacking_targets(self.node)
        return any(isinstance(i, ast.Starred) for i in items)

    @property
    def text(self) -> str:
        if isinstance(self.node, ast.Call):
            return f"`{short(self.node.func)}(...)`"
        return f"unpacking `{short(self.node.value)}`"

    def at(self, node: ast.AST | None, message: str) -> Finding:
        where = node if node is not None else self.node
        line, col = getattr(where, "lineno", 1), getattr(where, "col_offset", 0) + 1
        return Finding(Code.OP510, self.path, line, message, col)


def _before_star(items: Sequence[ast.expr]) -> Iterator[ast.expr]:
    for item in items:
        if isinstance(item, ast.Starred):
            return
        yield item


# --- the run --------------------------------------------------------------------------------


def argument_findings(
    world: World,
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    context: Context,
) -> list[Finding]:
    """Findings about calls and unpackings in ``trees`` (generated file name -> tree)."""
    resolver = Resolver(world)
    sites: list[_Site] = []
    for path, tree in sorted(trees.items()):
        scope = Scope(dotted_module(context.package, path))
        sites.extend(_sites(resolver, path, tree, scope))
    findings = [f for site in sites for f in _site_findings(site)]
    if context.upstream is not None:
        findings.extend(_copied_record_findings(world, trees, overrides, context, sites))
    return findings


def _sites(resolver: Resolver, path: str, tree: ast.Module, scope: Scope) -> Iterator[_Site]:
    """Every call and NamedTuple unpacking of ``tree`` whose definition resolves."""
    for node, where in calls_and_unpackings(tree.body, scope):
        signature = None
        if isinstance(node, ast.Call):
            signature = resolver.call(node, where)
        elif unpacking_targets(node):
            signature = resolver.unpacked(node.value, where)
            signature = signature if signature and signature.tuple_fields else None
        if signature is not None:
            yield _Site(path, node, signature)


# --- calls and unpackings against their definition ------------------------------------------


def _site_findings(site: _Site) -> Iterator[Finding]:
    if isinstance(site.node, ast.Call):
        yield from _call_findings(site, site.node)
    else:
        yield from _unpacking_findings(site)


def _call_findings(site: _Site, call: ast.Call) -> Iterator[Finding]:
    sig, noun, given = site.signature, site.signature.noun, site.items
    slots = sig.positional
    where = f"{sig.name} (line {sig.line})"
    if len(given) > len(slots) and not sig.varargs:
        names = ", ".join(f"`{p.name}`" for p in slots) or f"no {noun}"
        count = f"at least {len(given)}" if site.starred else str(len(given))
        yield site.at(
            given[len(slots)],
            f"{site.text} passes {count} positional arguments to {where}, which takes "
            f"{len(slots)} ({names})",
        )
    filled = {p.name for p in slots[: len(given)]}
    yield from _out_of_order(site, given, slots, where)
    passed = set()
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        param = sig.named(keyword.arg)
        if param is not None and param.keyword:
            passed.add(keyword.arg)
        if (param is None or not param.keyword) and not sig.varkw:
            what = "is positional-only" if param else f"has no {noun} of that name"
            yield site.at(keyword, f"{site.text} passes keyword `{keyword.arg}`; {where} {what}")
        elif keyword.arg in filled:
            yield site.at(
                keyword,
                f"{site.text} gives {noun} `{keyword.arg}` of {where} by position and by keyword",
            )
    if site.starred or any(k.arg is None for k in call.keywords):
        return
    for param in sig.params:
        if param.required and param.name not in filled | passed:
            yield site.at(call, f"{site.text} gives no value for {noun} `{param.name}` of {where}")


def _out_of_order(
    site: _Site, given: Sequence[ast.expr], slots: Sequence[Param], where: str
) -> Iterator[Finding]:
    """Bare names at the position of another parameter (or field) that has their name: one
    finding per site, at the first, naming the others (a shifted call misplaces them all)."""
    noun = site.signature.noun
    names = [p.name for p in site.signature.params]
    misplaced = [
        (index, item)
        for index, item in enumerate(given[: len(slots)])
        if isinstance(item, ast.Name) and item.id != slots[index].name and item.id in names
    ]
    if not misplaced:
        return
    index, first = misplaced[0]
    assert isinstance(first, ast.Name)
    verb = "passes" if isinstance(site.node, ast.Call) else "binds"
    message = (
        f"{site.text} {verb} `{first.id}` at position {index + 1}, where {noun} "
        f"`{slots[index].name}` of {where} stands (`{first.id}` is {noun} "
        f"{names.index(first.id) + 1})"
    )
    others = [f"`{item.id}` at {i + 1}" for i, item in misplaced[1:] if isinstance(item, ast.Name)]
    if others:
        message += "; also out of place: " + ", ".join(others)
    yield site.at(first, message)


def _unpacking_findings(site: _Site) -> Iterator[Finding]:
    sig, given = site.signature, site.items
    slots = sig.positional
    where = f"{sig.name} (line {sig.line})"
    targets = len(unpacking_targets(site.node)) if isinstance(site.node, ast.Assign) else 0
    if (targets != len(slots) and not site.starred) or (site.starred and len(given) > len(slots)):
        yield site.at(
            site.node,
            f"{site.text} into {targets} targets, but {where} has {len(slots)} fields",
        )
    yield from _out_of_order(site, given, slots, where)


# --- copied records against their upstream original -----------------------------------------


def _copied_record_findings(
    world: World,
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    context: Context,
    sites: Sequence[_Site],
) -> Iterator[Finding]:
    """A copied NamedTuple or dataclass that lost or reordered a field of its original."""
    upstream = context.upstream
    upstream_tree = world.tree(upstream.module) if upstream is not None else None
    if upstream is None or upstream_tree is None:
        return
    for override in overrides:
        tree = trees.get(override.module)
        if override.owner or override.upstream_owner or tree is None:
            continue
        ours = module_class(tree, override.name)
        theirs = module_class(upstream_tree, override.upstream_name)
        if ours is None or theirs is None:
            continue
        module = dotted_module(context.package, override.module)
        mine = record_fields(world, Class(module, ours))
        original = record_fields(world, Class(upstream.module, theirs))
        if mine is None or original is None:
            continue
        users = [s for s in sites if s.signature.name == mine.name]
        yield from _dropped_fields(override.module, ours, mine, original, users)
        yield from _reordered_fields(override.module, ours, mine, original)


def _dropped_fields(
    path: str, ours: ast.ClassDef, mine: Signature, original: Signature, users: Sequence[_Site]
) -> Iterator[Finding]:
    kept = {p.name for p in mine.params}
    positional = [p.name for p in original.positional]
    for index, param in enumerate(original.params):
        if param.name in kept:
            continue
        position = positional.index(param.name) if param.name in positional else None
        disagreeing = [
            (site, found)
            for site in users
            if (found := _disagreement(site, param.name, position)) is not None
        ]
        places = ", ".join(f"{site.path}:{site.node.lineno}" for site, _ in disagreeing)
        message = (
            f"`{ours.name}` copies {original.name} but drops its field `{param.name}` (field "
            f"{index + 1} of {len(original.params)}); "
            + (
                f"constructions and unpackings that disagree with upstream's fields: {places}"
                if places
                else "no construction or unpacking here fills it"
            )
        )
        yield Finding(Code.OP510, path, ours.lineno, message, ours.col_offset + 1)
        for site, (node, detail) in disagreeing:
            yield site.at(
                node,
                f"{site.text} {detail}, where upstream's {original.name} has field "
                f"`{param.name}`, which the generated `{ours.name}` dropped ({path}:{ours.lineno})",
            )


def _disagreement(site: _Site, field: str, position: int | None) -> tuple[ast.AST, str] | None:
    """Where and how a construction or unpacking misses upstream's ``field``; None when it
    fills it by name (or a ``*args`` may)."""
    if isinstance(site.node, ast.Call) and any(k.arg == field for k in site.node.keywords):
        return None
    items = site.items
    if position is None or (position >= len(items) and site.starred):
        return None
    verb = "gives" if isinstance(site.node, ast.Call) else "binds"
    if position >= len(items):
        return site.node, f"{verb} nothing at position {position + 1}"
    item = items[position]
    if isinstance(item, ast.Name) and item.id == field:
        return None
    return item, f"{verb} `{short(item)}` at position {position + 1}"


def _reordered_fields(
    path: str, ours: ast.ClassDef, mine: Signature, original: Signature
) -> Iterator[Finding]:
    theirs = [p.name for p in original.params]
    common = [p.name for p in mine.params if p.name in theirs]
    expected = [name for name in theirs if name in common]
    for mine_name, their_name in zip(common, expected, strict=True):
        if mine_name != their_name:
            message = (
                f"`{ours.name}` has field `{mine_name}` where its original {original.name} "
                f"has `{their_name}`: the copied fields are not in upstream's order"
            )
            yield Finding(Code.OP510, path, ours.lineno, message, ours.col_offset + 1)
            return
