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
from dataclasses import dataclass, replace
from typing import TypeGuard

from omni_port.model import Code, Finding
from omni_port.pyast.packages import (
    FUNCTIONS,
    Class,
    Function,
    Hierarchy,
    Target,
    World,
    attribute_of,
    class_hierarchy,
    class_member,
    import_bindings,
    imported_name,
    is_self_attribute,
    module_class,
    module_member,
    resolve_dotted,
    scope_bindings,
    scope_nodes,
)
from omni_port.pyast.signatures import Binding, Param, Signature, call_signature, record_fields
from omni_port.verify.context import Context, Override, dotted_module


@dataclass(frozen=True, slots=True)
class _Scope:
    """Where a piece of code sits: its module, class and enclosing functions."""

    module: str
    #: The class whose method holds the code (None outside methods).
    cls: Class | None = None
    #: Name of the method's instance parameter ("" when there is none).
    self_name: str = ""
    #: Enclosing functions, outermost first.
    functions: tuple[Function, ...] = ()


@dataclass(frozen=True, slots=True)
class _Site:
    """A call or an unpacking whose definition was resolved."""

    path: str
    node: ast.Call | ast.Assign
    signature: Signature

    @property
    def items(self) -> list[ast.expr]:
        """Positional arguments (up to a ``*args``) or unpacking targets (up to a ``*rest``)."""
        items = self.node.args if isinstance(self.node, ast.Call) else _targets(self.node)
        return list(_before_star(items))

    @property
    def starred(self) -> bool:
        items = self.node.args if isinstance(self.node, ast.Call) else _targets(self.node)
        return any(isinstance(i, ast.Starred) for i in items)

    @property
    def text(self) -> str:
        if isinstance(self.node, ast.Call):
            return f"`{_short(self.node.func)}(...)`"
        return f"unpacking `{_short(self.node.value)}`"

    def at(self, node: ast.AST | None, message: str) -> Finding:
        where = node if node is not None else self.node
        line, col = getattr(where, "lineno", 1), getattr(where, "col_offset", 0) + 1
        return Finding(Code.OP510, self.path, line, message, col)


def _targets(node: ast.Assign) -> list[ast.expr]:
    target = node.targets[0]
    return target.elts if isinstance(target, ast.Tuple | ast.List) else []


def _before_star(items: Sequence[ast.expr]) -> Iterator[ast.expr]:
    for item in items:
        if isinstance(item, ast.Starred):
            return
        yield item


def _short(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


# --- the run --------------------------------------------------------------------------------


def argument_findings(
    world: World,
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    context: Context,
) -> list[Finding]:
    """Findings about calls and unpackings in ``trees`` (generated file name -> tree)."""
    resolver = _Resolver(world)
    sites: list[_Site] = []
    for path, tree in sorted(trees.items()):
        scope = _Scope(dotted_module(context.package, path))
        sites.extend(resolver.sites(path, tree, scope))
    findings = [f for site in sites for f in _site_findings(site)]
    if context.upstream is not None:
        findings.extend(_copied_record_findings(world, trees, overrides, context, sites))
    return findings


# --- resolving callees and values -----------------------------------------------------------


class _Resolver:
    """Resolves callees and unpacked values to definitions, with caches per run."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._hierarchies: dict[int, Hierarchy] = {}
        self._assigned: dict[int, frozenset[str]] = {}
        self._locals: dict[int, frozenset[str]] = {}
        self._members: dict[tuple[str, str], Target | None] = {}
        self._records: dict[tuple[int, str], Signature | None] = {}
        self._scopes: dict[int, list[ast.AST]] = {}
        self._walks: dict[int, list[ast.AST]] = {}

    def sites(self, path: str, tree: ast.Module, scope: _Scope) -> Iterator[_Site]:
        for node, where in _nodes(tree.body, scope):
            signature = None
            if isinstance(node, ast.Call):
                signature = self.call(node, where)
            elif _targets(node):
                signature = self.unpacked(node.value, where)
                signature = signature if signature and signature.tuple_fields else None
            if signature is not None:
                yield _Site(path, node, signature)

    def call(self, call: ast.Call, scope: _Scope) -> Signature | None:
        found = self.callee(call.func, scope)
        return call_signature(self.world, *found) if found is not None else None

    def callee(self, func: ast.expr, scope: _Scope) -> tuple[Target, Binding] | None:
        if isinstance(func, ast.Name):
            target = self.name(func.id, scope)
            return (target, Binding.PLAIN) if target is not None else None
        if not isinstance(func, ast.Attribute):
            return None
        if scope.cls is not None and self._is_self(func.value, scope):
            target = self.instance_member(scope.cls, func.attr)
        elif scope.cls is not None and _is_super(func.value):
            target = self.instance_member(scope.cls, func.attr, after_self=True)
        else:
            base = self.expression(func.value, scope)
            target = attribute_of(self.world, base, func.attr) if base is not None else None
            return (target, Binding.PLAIN) if target is not None else None
        return (target, Binding.INSTANCE) if target is not None else None

    def expression(self, node: ast.expr, scope: _Scope) -> Target | None:
        """The module, class or function a name or attribute chain stands for."""
        if isinstance(node, ast.Name):
            return self.name(node.id, scope)
        if isinstance(node, ast.Attribute) and not self._is_self(node.value, scope):
            base = self.expression(node.value, scope)
            return attribute_of(self.world, base, node.attr) if base is not None else None
        return None

    def name(self, name: str, scope: _Scope) -> Target | None:
        for function in reversed(scope.functions):
            if name in self._function_locals(function):
                nodes = self._scope_of(function)
                return _local_target(self.world, function, name, scope.module, nodes)
        key = (scope.module, name)
        if key not in self._members:
            self._members[key] = module_member(self.world, scope.module, name)
        return self._members[key]

    def instance_member(self, cls: Class, name: str, after_self: bool = False) -> Target | None:
        """The method ``self.name`` (or ``super().name``) calls; None when an instance
        attribute of that name may shadow it or a base cannot be read."""
        hierarchy = self.hierarchy(cls)
        if hierarchy.unknown or any(
            name in self._instance_attributes(c) for c in hierarchy.classes
        ):
            return None
        classes = hierarchy.classes[1:] if after_self else hierarchy.classes
        return class_member(Hierarchy(classes, ()), name)

    def hierarchy(self, cls: Class) -> Hierarchy:
        if id(cls.node) not in self._hierarchies:
            self._hierarchies[id(cls.node)] = class_hierarchy(self.world, cls)
        return self._hierarchies[id(cls.node)]

    def unpacked(self, value: ast.expr, scope: _Scope) -> Signature | None:
        """The record type of an unpacked value: ``self.<attr>``, a local or a construction."""
        if isinstance(value, ast.Attribute) and scope.cls and self._is_self(value.value, scope):
            return self.attribute_record(scope.cls, value.attr)
        if isinstance(value, ast.Call):
            return self._constructed(value, scope)
        if isinstance(value, ast.Name) and scope.functions:
            return self._local_record(scope.functions[-1], value.id, scope)
        return None

    def attribute_record(self, cls: Class, attr: str) -> Signature | None:
        """The one record class ``self.<attr>`` holds: what the methods that run (the first
        definition of each name along the bases) construct and assign to it, else its
        annotation. None when anything else may be assigned or the bases cannot be read."""
        key = (id(cls.node), attr)
        if key not in self._records:
            self._records[key] = self._attribute_record(cls, attr)
        return self._records[key]

    def _attribute_record(self, cls: Class, attr: str) -> Signature | None:
        hierarchy = self.hierarchy(cls)
        if hierarchy.unknown:
            return None
        built: dict[str, Signature] = {}
        annotated: dict[str, Signature] = {}
        for owner, method in _effective_methods(hierarchy):
            scope = _Scope(owner.module, owner, _first_parameter(method), (method,))
            stores = _plain_stores(self._walk(method), scope.self_name, attr)
            if stores is None:
                return None
            for value, annotation in stores:
                if annotation is not None:
                    found = self._annotation(annotation, scope)
                    if found is not None:
                        annotated[found.name] = found
                if value is None or _is_none(value):
                    continue
                made = self._constructed(value, scope) if isinstance(value, ast.Call) else None
                if made is None:
                    return None
                built[made.name] = made
        chosen = built or annotated
        return next(iter(chosen.values())) if len(chosen) == 1 else None

    def _constructed(self, call: ast.Call, scope: _Scope) -> Signature | None:
        found = self.callee(call.func, scope)
        if found is None or not isinstance(found[0].node, ast.ClassDef):
            return None
        return record_fields(self.world, Class(found[0].module, found[0].node))

    def _annotation(self, node: ast.expr, scope: _Scope) -> Signature | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [s for s in (node.left, node.right) if not _is_none(s)]
            return self._annotation(sides[0], scope) if len(sides) == 1 else None
        if isinstance(node, ast.Subscript) and _short(node.value).endswith("Optional"):
            return self._annotation(node.slice, scope)
        target = self.expression(node, scope)
        if target is None or not isinstance(target.node, ast.ClassDef):
            return None
        return record_fields(self.world, Class(target.module, target.node))

    def _local_record(self, function: Function, name: str, scope: _Scope) -> Signature | None:
        """The record a local holds when its every binding is one construction."""
        nodes = self._scope_of(function)
        stores = [
            n
            for n in nodes
            if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
        ]
        assigns = [
            n
            for n in nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == name
        ]
        params = self._function_locals(function) - self._body_bindings(function)
        if not assigns or len(stores) != len(assigns) or name in params:
            return None  # bound by something other than plain assignments
        made = {
            self._constructed(n.value, scope) if isinstance(n.value, ast.Call) else None
            for n in assigns
        }
        return made.pop() if len(made) == 1 else None

    def _is_self(self, node: ast.expr, scope: _Scope) -> bool:
        if not (isinstance(node, ast.Name) and scope.self_name and node.id == scope.self_name):
            return False
        # Rebinding ``self`` anywhere in the method makes it anything.
        return not any(scope.self_name in self._body_bindings(f) for f in scope.functions)

    def _function_locals(self, function: Function) -> frozenset[str]:
        """Parameters and every name the function's own scope binds."""
        args = function.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        return frozenset(a.arg for a in params if a is not None) | self._body_bindings(function)

    def _scope_of(self, function: Function) -> list[ast.AST]:
        """The nodes of a function's own scope (nested bodies excluded), computed once."""
        if id(function) not in self._scopes:
            self._scopes[id(function)] = list(scope_nodes(function.body))
        return self._scopes[id(function)]

    def _walk(self, function: Function) -> list[ast.AST]:
        """Every node below a function, computed once."""
        if id(function) not in self._walks:
            self._walks[id(function)] = list(ast.walk(function))
        return self._walks[id(function)]

    def _body_bindings(self, function: Function) -> frozenset[str]:
        if id(function) not in self._locals:
            self._locals[id(function)] = frozenset(scope_bindings(function.body))
        return self._locals[id(function)]

    def _instance_attributes(self, cls: Class) -> frozenset[str]:
        """Attributes a class's methods assign on ``self`` (they shadow methods)."""
        if id(cls.node) not in self._assigned:
            self._assigned[id(cls.node)] = frozenset(
                node.attr
                for node in ast.walk(cls.node)
                if is_self_attribute(node) and not isinstance(node.ctx, ast.Load)
            )
        return self._assigned[id(cls.node)]


def _nodes(
    body: Sequence[ast.AST], scope: _Scope
) -> Iterator[tuple[ast.Call | ast.Assign, _Scope]]:
    """Every call and tuple-unpacking assignment below ``body``, with its scope."""
    for node in body:
        inner = scope
        if isinstance(node, ast.ClassDef) and scope.cls is None and not scope.functions:
            inner = replace(scope, cls=Class(scope.module, node))
        elif isinstance(node, FUNCTIONS):
            inner = _function_scope(node, scope)
        elif isinstance(node, ast.Call) or (isinstance(node, ast.Assign) and _targets(node)):
            yield node, scope
        yield from _nodes(list(ast.iter_child_nodes(node)), inner)


def _function_scope(node: Function, outer: _Scope) -> _Scope:
    self_name = outer.self_name
    if outer.cls is not None and not outer.functions:
        names = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        self_name = "" if names & {"staticmethod", "classmethod"} else _first_parameter(node)
    args = node.args
    if any(a.arg == self_name for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]):
        self_name = "" if outer.functions or outer.cls is None else self_name
    return replace(outer, self_name=self_name, functions=(*outer.functions, node))


def _first_parameter(node: Function) -> str:
    positional = [*node.args.posonlyargs, *node.args.args]
    return positional[0].arg if positional else ""


def _local_target(
    world: World, function: Function, name: str, module: str, nodes: Sequence[ast.AST]
) -> Target | None:
    """What a local of ``function`` (whose own scope's ``nodes`` are given) stands for when
    it is bound once, by a ``def``, a ``class`` or an import, and by nothing else."""
    defs = [n for n in nodes if isinstance(n, FUNCTIONS | ast.ClassDef) and n.name == name]
    imports = [
        n
        for n in nodes
        if isinstance(n, ast.Import | ast.ImportFrom) and name in import_bindings(n)
    ]
    others = [
        n
        for n in nodes
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
    ]
    args = function.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if others or name in params or len(defs) + len(imports) != 1:
        return None
    if defs:
        return Target(module, defs[0])
    target = imported_name(imports[0], name, world.package_of(module))
    return resolve_dotted(world, target) if target else None


def _effective_methods(hierarchy: Hierarchy) -> Iterator[tuple[Class, Function]]:
    """Each method that runs for its name: its first definition along the bases."""
    seen: set[str] = set()
    for cls in hierarchy.classes:
        for node in cls.node.body:
            if isinstance(node, FUNCTIONS) and node.name not in seen:
                seen.add(node.name)
                yield cls, node


def _is_attr(node: ast.AST, self_name: str, attr: str) -> TypeGuard[ast.Attribute]:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def _plain_stores(
    nodes: Sequence[ast.AST], self_name: str, attr: str
) -> list[tuple[ast.expr | None, ast.expr | None]] | None:
    """(value, annotation) of each ``self.<attr> [: T] = value`` among a method's ``nodes``;
    None when the attribute is also stored otherwise (a tuple target, ``+=``, ``setattr``)."""
    plain: list[tuple[ast.expr | None, ast.expr | None]] = []
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            if _is_attr(node.targets[0], self_name, attr):
                plain.append((node.value, None))
        elif isinstance(node, ast.AnnAssign) and _is_attr(node.target, self_name, attr):
            plain.append((node.value, node.annotation))
    stores = [n for n in nodes if _is_attr(n, self_name, attr) and not isinstance(n.ctx, ast.Load)]
    setattrs = [n for n in nodes if _sets_attribute(n, self_name, attr)]
    return plain if len(stores) == len(plain) and not setattrs else None


def _sets_attribute(node: ast.AST, self_name: str, attr: str) -> bool:
    """``setattr(self, "<attr>", ...)``. A computed name is not seen, as in the attribute
    check: vLLM's ``update_config`` sets config attributes that way."""
    if not (isinstance(node, ast.Call) and _short(node.func) == "setattr" and node.args):
        return False
    first = node.args[0]
    if not (isinstance(first, ast.Name) and first.id == self_name) or len(node.args) < 2:
        return False
    name = node.args[1]
    return isinstance(name, ast.Constant) and name.value == attr


def _is_super(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
    )


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


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
    targets = len(_targets(site.node)) if isinstance(site.node, ast.Assign) else 0
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
    return item, f"{verb} `{_short(item)}` at position {position + 1}"


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
