"""What a call or an unpacked value in a generated module refers to, read from the sources.

Resolution follows Python's rules as far as the text tells them for certain: a name is
looked up in the enclosing functions (a local bound once by a ``def``, a ``class`` or an
import), then in the module (following imports, re-exports and star imports); ``self.m``
and ``super().m`` along the class's bases (C3 order); ``Module.f`` and ``Class.m`` through
their definitions. Anything else (a local bound otherwise, an attribute an instance
assigns, a base that cannot be read) resolves to nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeGuard

from omni_port.pyast.definitions import (
    Target,
    attribute_of,
    class_member,
    imported_name,
    module_member,
    resolve_dotted,
)
from omni_port.pyast.packages import (
    FUNCTIONS,
    Class,
    Function,
    Hierarchy,
    World,
    class_hierarchy,
    instance_attributes,
    scope_bindings,
    scope_nodes,
)
from omni_port.pyast.signatures import Binding, Signature, call_signature, record_fields
from omni_port.pyast.syntax import import_bindings
from omni_port.report import shorten


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a piece of code sits: its module, class and enclosing functions."""

    module: str
    #: The class whose method holds the code (None outside methods).
    cls: Class | None = None
    #: Name of the method's instance parameter ("" when there is none).
    self_name: str = ""
    #: Enclosing functions, outermost first.
    functions: tuple[Function, ...] = ()


def unpacking_targets(node: ast.Assign) -> list[ast.expr]:
    """The targets of ``(a, b) = value`` (none for any other assignment)."""
    target = node.targets[0]
    return target.elts if isinstance(target, ast.Tuple | ast.List) else []


def short(node: ast.expr) -> str:
    """The source text of an expression, cut at 60 characters, for reports."""
    return shorten(ast.unparse(node), 60)


class Resolver:
    """Resolves callees and unpacked values to definitions, with caches per run."""

    def __init__(self, world: World) -> None:
        self.world = world
        # Keyed by the nodes themselves, never their id(): a node freed while this lives
        # could hand its id to another one.
        self._hierarchies: dict[ast.ClassDef, Hierarchy] = {}
        self._locals: dict[Function, frozenset[str]] = {}
        self._members: dict[tuple[str, str], Target | None] = {}
        self._records: dict[tuple[ast.ClassDef, str], Signature | None] = {}
        self._scopes: dict[Function, list[ast.AST]] = {}
        self._walks: dict[Function, list[ast.AST]] = {}

    def call(self, call: ast.Call, scope: Scope) -> Signature | None:
        """What the call may pass, when its callee resolves for certain."""
        found = self.callee(call.func, scope)
        return call_signature(self.world, *found) if found is not None else None

    def callee(self, func: ast.expr, scope: Scope) -> tuple[Target, Binding] | None:
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

    def expression(self, node: ast.expr, scope: Scope) -> Target | None:
        """The module, class or function a name or attribute chain stands for."""
        if isinstance(node, ast.Name):
            return self.name(node.id, scope)
        if isinstance(node, ast.Attribute) and not self._is_self(node.value, scope):
            base = self.expression(node.value, scope)
            return attribute_of(self.world, base, node.attr) if base is not None else None
        return None

    def name(self, name: str, scope: Scope) -> Target | None:
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
        if hierarchy.unknown or any(name in instance_attributes(c.node) for c in hierarchy.classes):
            return None
        classes = hierarchy.classes[1:] if after_self else hierarchy.classes
        return class_member(Hierarchy(classes, ()), name)

    def hierarchy(self, cls: Class) -> Hierarchy:
        if cls.node not in self._hierarchies:
            self._hierarchies[cls.node] = class_hierarchy(self.world, cls)
        return self._hierarchies[cls.node]

    def unpacked(self, value: ast.expr, scope: Scope) -> Signature | None:
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
        key = (cls.node, attr)
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
            scope = Scope(owner.module, owner, _first_parameter(method), (method,))
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

    def _constructed(self, call: ast.Call, scope: Scope) -> Signature | None:
        found = self.callee(call.func, scope)
        if found is None or not isinstance(found[0].node, ast.ClassDef):
            return None
        return record_fields(self.world, Class(found[0].module, found[0].node))

    def _annotation(self, node: ast.expr, scope: Scope) -> Signature | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [s for s in (node.left, node.right) if not _is_none(s)]
            return self._annotation(sides[0], scope) if len(sides) == 1 else None
        if isinstance(node, ast.Subscript) and short(node.value).endswith("Optional"):
            return self._annotation(node.slice, scope)
        target = self.expression(node, scope)
        if target is None or not isinstance(target.node, ast.ClassDef):
            return None
        return record_fields(self.world, Class(target.module, target.node))

    def _local_record(self, function: Function, name: str, scope: Scope) -> Signature | None:
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

    def _is_self(self, node: ast.expr, scope: Scope) -> bool:
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
        if function not in self._scopes:
            self._scopes[function] = list(scope_nodes(function.body))
        return self._scopes[function]

    def _walk(self, function: Function) -> list[ast.AST]:
        """Every node below a function, computed once."""
        if function not in self._walks:
            self._walks[function] = list(ast.walk(function))
        return self._walks[function]

    def _body_bindings(self, function: Function) -> frozenset[str]:
        if function not in self._locals:
            self._locals[function] = frozenset(scope_bindings(function.body))
        return self._locals[function]


def calls_and_unpackings(
    body: Sequence[ast.AST], scope: Scope
) -> Iterator[tuple[ast.Call | ast.Assign, Scope]]:
    """Every call and tuple-unpacking assignment below ``body``, with its scope."""
    for node in body:
        inner = scope
        if isinstance(node, ast.ClassDef) and scope.cls is None and not scope.functions:
            inner = replace(scope, cls=Class(scope.module, node))
        elif isinstance(node, FUNCTIONS):
            inner = _function_scope(node, scope)
        elif isinstance(node, ast.Call) or (
            isinstance(node, ast.Assign) and unpacking_targets(node)
        ):
            yield node, scope
        yield from calls_and_unpackings(list(ast.iter_child_nodes(node)), inner)


def _function_scope(node: Function, outer: Scope) -> Scope:
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
    if not (isinstance(node, ast.Call) and short(node.func) == "setattr" and node.args):
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
