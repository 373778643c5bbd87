"""Where a name of the package sources is defined: a module, a class or a function.

Read as text, never imported; a name bound more than once, by an assignment, or by
anything that cannot be read resolves to nothing rather than to a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

from omni_port.pyast import memo
from omni_port.pyast.packages import (
    FUNCTIONS,
    Class,
    Function,
    Hierarchy,
    World,
    absolute_module,
    class_hierarchy,
    module_exports,
    scope_bindings,
    scope_nodes,
)
from omni_port.pyast.syntax import find_def, import_bindings


@dataclass(frozen=True, slots=True)
class Target:
    """What a dotted name resolves to: a module, or a class or function defined in one."""

    #: Dotted module the definition is in (or the module itself).
    module: str
    #: The definition; None when the target is the module.
    node: ast.ClassDef | Function | None = None
    #: The class whose body holds ``node`` (a method), else None.
    owner: ast.ClassDef | None = None

    @property
    def qualified(self) -> str:
        """``module.Class.method`` for reports."""
        parts = [self.module]
        if self.owner is not None:
            parts.append(self.owner.name)
        if self.node is not None:
            parts.append(self.node.name)
        return ".".join(parts)


def module_member(world: World, module: str, name: str, depth: int = 0) -> Target | None:
    """What ``module.name`` is, following imports, re-exports and star imports; None when it
    cannot be told for certain (not read, bound more than once or by an assignment)."""
    tree = world.tree(module)
    if tree is None or depth > 20:
        return None
    defs, imports, other = _bindings_of(tree, name)
    stars = [node for node in other if isinstance(node, ast.ImportFrom)]
    if len(defs) == 1 and not imports and not other:
        return Target(module, defs[0])
    if defs or len(stars) != len(other):
        return None
    package = world.package_of(module)
    if imports:
        targets = {imported_name(node, name, package) for node in imports}
        target = targets.pop() if len(targets) == 1 and not stars else ""
        return resolve_dotted(world, target, depth + 1) if target else None
    if stars:
        return _star_member(world, stars, name, package, depth)
    if world.exists(f"{module}.{name}"):
        return Target(f"{module}.{name}")
    return None


def _star_member(
    world: World, stars: Sequence[ast.ImportFrom], name: str, package: str, depth: int
) -> Target | None:
    """``name`` as one of several ``from m import *`` provides it (exactly one must)."""
    found: list[Target | None] = []
    for star in stars:
        source = absolute_module(star, package)
        tree = world.tree(source) if source else None
        if tree is None or module_exports(tree).open:
            return None
        if name in module_exports(tree).names and source:
            found.append(module_member(world, source, name, depth + 1))
    return found[0] if len(found) == 1 else None


def resolve_dotted(world: World, dotted: str, depth: int = 0) -> Target | None:
    """What an absolute dotted name (``pkg.mod.Class.method``) resolves to, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if world.tree(module) is not None or (cut == len(parts) and world.exists(module)):
            break
    else:
        return None
    found: Target | None = Target(module)
    for attr in parts[cut:]:
        found = attribute_of(world, found, attr, depth) if found is not None else None
    return found


def attribute_of(world: World, target: Target, attr: str, depth: int = 0) -> Target | None:
    """``target.attr``: a module's member, or a class's member along its bases."""
    if target.node is None:
        return module_member(world, target.module, attr, depth)
    if isinstance(target.node, ast.ClassDef):
        hierarchy = class_hierarchy(world, Class(target.module, target.node))
        return class_member(hierarchy, attr)
    return None


def class_member(hierarchy: Hierarchy, name: str) -> Target | None:
    """The function ``name`` first found along ``hierarchy``; None when it is not a plain
    ``def`` there (an assignment, a nested class) or a base that could not be read may hold it."""
    for cls in hierarchy.classes:
        found = find_def(cls.node.body, name)
        if found is None and name in scope_bindings(cls.node.body):
            return None
        if isinstance(found, FUNCTIONS):
            return Target(cls.module, found, cls.node)
        if found is not None:
            return None
    return None


@dataclass(frozen=True, slots=True)
class _Bindings:
    """What binds one name at module level."""

    defs: list[ast.ClassDef | Function] = field(default_factory=list)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    #: Assignments and other stores, then every star import (which may bind anything).
    other: list[ast.AST] = field(default_factory=list)


def _bindings_of(
    tree: ast.Module, name: str
) -> tuple[list[ast.ClassDef | Function], list[ast.Import | ast.ImportFrom], list[ast.AST]]:
    """Module-level bindings of ``name``: definitions, imports and anything else."""
    index, stars = _module_index(tree)
    found = index.get(name, _Bindings())
    return found.defs, found.imports, [*found.other, *stars]


@memo.memoized
def _module_index(tree: ast.Module) -> tuple[dict[str, _Bindings], tuple[ast.ImportFrom, ...]]:
    """Every module-level binding by name, and the star imports (one pass per module: a run
    resolves hundreds of names in the same few modules)."""
    index: dict[str, _Bindings] = {}
    stars: list[ast.ImportFrom] = []
    for node in scope_nodes(tree.body):
        if isinstance(node, FUNCTIONS | ast.ClassDef):
            index.setdefault(node.name, _Bindings()).defs.append(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for bound in import_bindings(node):
                index.setdefault(bound, _Bindings()).imports.append(node)
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                stars.append(node)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            index.setdefault(node.id, _Bindings()).other.append(node)
    return index, tuple(stars)


def imported_name(node: ast.Import | ast.ImportFrom, name: str, package: str) -> str:
    """The absolute dotted name the binding ``name`` of an import statement refers to."""
    for alias in node.names:
        if isinstance(node, ast.Import):
            if alias.asname == name:
                return alias.name
            if alias.asname is None and alias.name.split(".")[0] == name:
                return name
            continue
        module = absolute_module(node, package)
        if (alias.asname or alias.name) == name and module is not None:
            return f"{module}.{alias.name}" if module else alias.name
    return ""
