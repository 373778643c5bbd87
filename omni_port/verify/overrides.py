"""Check 5a: copied members still exist upstream, with a compatible signature."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence

from omni_port.model import Code, Finding, Severity, Upstream
from omni_port.pyast.packages import (
    FUNCTIONS,
    Class,
    World,
    class_hierarchy,
    find_member,
    module_class,
)
from omni_port.pyast.syntax import find_def
from omni_port.verify.context import Override, unread


def override_findings(
    world: World,
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    upstream: Upstream | None,
) -> Iterator[Finding]:
    if upstream is None:
        return
    for override in overrides:
        tree = trees.get(override.module)
        ours = _generated_member(tree, override) if tree is not None else None
        if ours is None:
            continue  # not in the module: sync left it commented out and said so
        yield from _override_finding(world, upstream.module, override, ours)


def _generated_member(tree: ast.Module, override: Override) -> ast.stmt | None:
    if not override.owner:
        return find_def(tree.body, override.name)
    owner = module_class(tree, override.owner)
    return find_def(owner.body, override.name) if owner is not None else None


def _override_finding(
    world: World, module: str, override: Override, ours: ast.stmt
) -> Iterator[Finding]:
    theirs, unknown = _upstream_member(world, module, override)
    where = f"{override.upstream_owner}.{override.upstream_name}".lstrip(".")
    mine = f"{override.owner}.{override.name}".lstrip(".")
    line, col = ours.lineno, ours.col_offset + 1
    if theirs is None and unknown:
        message = f"unverified: {where} not found in what could be read; {unread(unknown)}"
        yield Finding(Code.OP506, override.module, line, message, col, Severity.NOTE)
    elif theirs is None:
        message = f"{mine} copies {where}, which no longer exists upstream"
        yield Finding(Code.OP508, override.module, line, message, col)
    elif isinstance(theirs, FUNCTIONS) and isinstance(ours, FUNCTIONS):
        problem = _signature_problem(theirs.args, ours.args)
        if problem is not None:
            message = f"{mine} does not match the signature of {where}: {problem}"
            yield Finding(Code.OP508, override.module, line, message, col)


def _upstream_member(
    world: World, module: str, override: Override
) -> tuple[ast.stmt | None, tuple[str, ...]]:
    """The upstream definition (searched along the class's bases) and the unreadable bases."""
    tree = world.tree(module)
    if tree is None:
        return None, (module,)
    if not override.upstream_owner:
        return find_def(tree.body, override.upstream_name), ()
    owner = module_class(tree, override.upstream_owner)
    if owner is None:
        return None, ()
    hierarchy = class_hierarchy(world, Class(module, owner))
    return find_member(hierarchy.classes, override.upstream_name), hierarchy.unknown


def _signature_problem(upstream: ast.arguments, ours: ast.arguments) -> str | None:
    """Why ``ours`` cannot stand in for ``upstream``; None when every upstream call still works."""
    theirs_pos = [a.arg for a in [*upstream.posonlyargs, *upstream.args]]
    ours_pos = [a.arg for a in [*ours.posonlyargs, *ours.args]]
    for index, name in enumerate(theirs_pos):
        if index >= len(ours_pos):
            if ours.vararg is None:
                return f"it takes no positional parameter `{name}`"
            break
        if ours_pos[index] != name:
            return f"positional parameter {index + 1} is `{ours_pos[index]}`, upstream `{name}`"
    required = ours_pos[len(theirs_pos) : len(ours_pos) - len(ours.defaults)]
    if required:
        return f"it requires `{required[0]}`, which upstream callers do not pass"
    return _keyword_problem(upstream, ours)


def _keyword_problem(upstream: ast.arguments, ours: ast.arguments) -> str | None:
    theirs_kw = [a.arg for a in [*upstream.args, *upstream.kwonlyargs]]
    ours_kw = {a.arg for a in [*ours.args, *ours.kwonlyargs]}
    if ours.kwarg is None:
        missing = [name for name in theirs_kw if name not in ours_kw]
        if missing:
            return f"it does not accept keyword `{missing[0]}`"
    required = [
        a.arg
        for a, default in zip(ours.kwonlyargs, ours.kw_defaults, strict=True)
        if default is None and a.arg not in theirs_kw
    ]
    if required:
        return f"it requires keyword `{required[0]}`, which upstream callers do not pass"
    if upstream.vararg is not None and ours.vararg is None:
        return f"it does not accept `*{upstream.vararg.arg}`"
    if upstream.kwarg is not None and ours.kwarg is None:
        return f"it does not accept `**{upstream.kwarg.arg}`"
    return None
