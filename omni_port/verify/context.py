"""What generated modules are verified against: upstream, package sources, copies."""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from omni_port.model import Block, Copy, PatchSet, Placement, Status, Upstream
from omni_port.pyast.packages import (
    FUNCTIONS,
    Function,
    PackageSources,
    World,
    module_class,
    module_tree,
)
from omni_port.pyast.syntax import find_def


@dataclass(frozen=True, slots=True)
class Override:
    """A member of a generated module that is a copy of an upstream definition."""

    #: Generated module file name, e.g. ``npu_ar_model_runner.py``.
    module: str
    #: Class holding the member ("" at module level).
    owner: str
    #: Member name in the generated module.
    name: str
    #: Upstream class holding the original ("" at module level).
    upstream_owner: str
    #: Name of the original.
    upstream_name: str


@dataclass(frozen=True, slots=True)
class Context:
    """Where the generated modules live and what they are checked against."""

    #: Dotted package of the generated modules (``vllm_omni.platforms.npu.worker``); their
    #: relative imports resolve against it and they may import each other under it.
    package: str = ""
    sources: PackageSources = field(default_factory=PackageSources)
    #: The upstream module of the copies; without it, overrides are not checked.
    upstream: Upstream | None = None
    #: Top-level packages whose imports are checked. Every other import (stdlib, torch,
    #: numpy, ...) is out of scope and never reported.
    checked_packages: frozenset[str] = frozenset()
    #: Import bindings each source module already left unused, by generated file name.
    unused_in_source: Mapping[str, Collection[str]] = field(default_factory=dict)
    #: Why a checked package's source is missing, by top-level package (for the notes).
    unavailable: Mapping[str, str] = field(default_factory=dict)


def overrides_of(patches: PatchSet) -> tuple[Override, ...]:
    """The copied members of a patch set, as overrides to check."""
    return tuple(
        Override(m.name, p.owner, p.name, p.upstream_owner, p.upstream_name)
        for m in patches.modules
        for p in m.pieces
        if isinstance(p, Copy)
    )


def blocks_of(patches: PatchSet) -> tuple[Block, ...]:
    """The statement-level blocks of a patch set (their anchors say what each replaced)."""
    return tuple(p for m in patches.modules for p in m.pieces if isinstance(p, Block))


def unused_in_source_of(patches: PatchSet) -> dict[str, tuple[str, ...]]:
    """The imports each source module left unused, by module file name."""
    return {m.name: m.unused_imports for m in patches.modules}


def is_placed_block(placement: Placement) -> bool:
    return (
        placement.status is Status.PLACED
        and placement.kind in ("insertion", "replacement")
        and 0 < placement.start <= placement.end
    )


def dotted_module(package: str, file_name: str) -> str:
    """The module a generated file stands in for; a path below the tree's root is a
    subpackage (``model_states/omni_model_state.py`` of a V2 tree)."""
    stem = file_name.removesuffix(".py").replace("/", ".")
    return f"{package}.{stem}" if package else stem


def world_of(modules: Mapping[str, str], context: Context) -> World:
    texts = dict(context.sources.modules)
    if context.upstream is not None:
        texts[context.upstream.module] = context.upstream.text
    texts.update({dotted_module(context.package, name): text for name, text in modules.items()})
    packages = {name.rsplit(".", i)[0] for name in texts for i in range(1, name.count(".") + 1)}
    return World(texts, context.sources.packages, frozenset(packages))


def unread(unknown: Sequence[str]) -> str:
    return "could not read " + ", ".join(unknown)


def function_in(tree: ast.Module, owner: str, name: str) -> Function | None:
    """The function ``name`` of class ``owner`` ("" at module level) in ``tree``, if any."""
    holder: ast.Module | ast.ClassDef | None = module_class(tree, owner) if owner else tree
    node = find_def(holder.body, name) if holder is not None else None
    return node if isinstance(node, FUNCTIONS) else None


def old_runner(path: str, context: Context) -> ast.Module | None:
    """The omni source module the generated ``path`` was made from, when it is given."""
    module = dotted_module(context.package, path)
    text = context.sources.modules.get(module)
    if text is None:
        return None
    return module_tree(module, text)
