"""Static verification of generated runner modules, against pinned sources read as text.

Nothing is ever imported: every module, generated or pinned, is read with ``ast``. The
checks, in the order ``verify`` runs them:

1. each module parses and compiles (OP501); a module that does not is not checked further;
2. pyflakes: undefined names (OP502), names defined twice (OP503), imports that splicing
   left unused (OP504; imports the source module already left unused are allowed);
3. imports of ``checked_packages`` resolve against the package sources (OP505); imports of
   a checked package whose source is not given are one note per package (OP506);
4. a placed block reads no local name that is not bound on every path before it (OP507);
5. copied members still exist upstream with a compatible signature (OP508), and every
   ``self.<attr>`` a placed block reads is still defined by the classes involved (OP509).

What cannot be known from the given sources is a note (OP506), never a pass and never an
error. Known limits, all on the side of silence or of a note rather than a false error
unless said otherwise:

- a module with a star import or a module ``__getattr__`` defines every name; other
  dynamic definitions (``globals()[...]``, computed ``setattr``) are not seen, and an
  import inside a ``try`` that catches ImportError is taken as optional and not checked;
- the binding analysis is path-insensitive: ``if a: x = 1`` then ``if a: use(x)`` is
  reported (as a note when the upstream method itself does the same). Loop bodies bind
  nothing after the loop (their ``else`` does, when no ``break`` can skip it); a ``with``
  body is assumed to run to its end; reads inside nested functions and lambdas (which run
  later) and blocks at class level are not checked;
- an attribute counts as defined when any class of the generated class's or the upstream
  class's hierarchy assigns ``self.<attr>`` (or ``setattr(self, "<attr>", ...)``) or
  defines it at class level; assignments from outside the class are not seen, and a
  ``__getattr__`` anywhere in the hierarchy defines everything;
- only copies are checked as overrides (omni-owned methods are not), and decorated
  signatures are taken at face value.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from omni_port.model import Code, Copy, Finding, PatchSet, Placement, Severity, Status
from omni_port.pyast.flow import hazards, unbound_reads
from omni_port.pyast.names import issues
from omni_port.pyast.packages import (
    FUNCTIONS,
    STATEMENTS,
    Class,
    Function,
    Hierarchy,
    PackageSources,
    World,
    absolute_module,
    class_hierarchy,
    class_names,
    dotted_name,
    find_member,
    is_self_attribute,
    lookup_class,
    module_class,
    module_exports,
    module_names,
    unresolved,
)
from omni_port.pyast.parser import compile_findings
from omni_port.pyast.syntax import find_def
from omni_port.sources.upstream import Upstream

# PackageSources and module_names are re-exported: callers build inputs from ``verify``.
__all__ = [
    "Context",
    "Override",
    "PackageSources",
    "module_names",
    "overrides_of",
    "unused_in_source_of",
    "verify",
]

# --- inputs ---------------------------------------------------------------------------------


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


def overrides_of(patches: PatchSet) -> tuple[Override, ...]:
    """The copied members of a patch set, as overrides to check."""
    return tuple(
        Override(m.name, p.owner, p.name, p.upstream_owner, p.upstream_name)
        for m in patches.modules
        for p in m.pieces
        if isinstance(p, Copy)
    )


def unused_in_source_of(patches: PatchSet) -> dict[str, tuple[str, ...]]:
    """The imports each source module left unused, by module file name."""
    return {m.name: m.unused_imports for m in patches.modules}


# --- the run --------------------------------------------------------------------------------


def verify(
    modules: Mapping[str, str],
    placements: Sequence[Placement],
    overrides: Sequence[Override],
    context: Context,
) -> list[Finding]:
    """Every finding about the generated ``modules`` (file name -> text), sorted.

    ``placements`` say where each block landed (only placed insertions and replacements
    are checked); ``overrides`` name the copied members. Never raises on bad input text.
    """
    world = _world(modules, context)
    trees: dict[str, ast.Module] = {}
    findings: list[Finding] = []
    for name in sorted(modules):
        broken = compile_findings(name, modules[name])
        findings.extend(broken)
        if not broken:
            trees[name] = ast.parse(modules[name], filename=name)
    for name, tree in trees.items():
        blocks = [p for p in placements if p.module == name and _is_placed_block(p)]
        mine = [o for o in overrides if o.module == name]
        originals = _originals(world, context.upstream, mine)
        binding, covered = _binding_findings(name, tree, blocks, originals)
        allowed = frozenset(context.unused_in_source.get(name, ()))
        findings.extend(_name_findings(name, modules[name], allowed, covered))
        findings.extend(binding)
        findings.extend(_attribute_findings(world, name, tree, blocks, mine, context))
    findings.extend(_import_findings(world, trees, context))
    findings.extend(_override_findings(world, trees, overrides, context.upstream))
    return sorted(findings, key=lambda f: (f.path, f.line, f.col, f.code, f.message))


def _is_placed_block(placement: Placement) -> bool:
    return (
        placement.status is Status.PLACED
        and placement.kind in ("insertion", "replacement")
        and 0 < placement.start <= placement.end
    )


def _dotted(package: str, file_name: str) -> str:
    stem = file_name.removesuffix(".py")
    return f"{package}.{stem}" if package else stem


# --- 1. compile -----------------------------------------------------------------------------


# --- 2. names (pyflakes) --------------------------------------------------------------------


def _name_findings(
    name: str, text: str, allowed: frozenset[str], covered: frozenset[tuple[str, int]]
) -> Iterator[Finding]:
    """pyflakes' findings, minus undefined names a block-binding finding already explains."""
    for issue in issues(text, name):
        if issue.kind == "undefined" and (issue.name, issue.line) not in covered:
            message = f"undefined name `{issue.name}`"
            yield Finding(Code.OP502, name, issue.line, message, issue.col)
        elif issue.kind == "redefinition":
            yield Finding(Code.OP503, name, issue.line, issue.message, issue.col)
        elif issue.kind == "unused-import" and issue.name not in allowed:
            message = f"`{issue.name}` is imported but unused after splicing"
            yield Finding(Code.OP504, name, issue.line, message, issue.col)


# --- module sources -------------------------------------------------------------------------


def _world(modules: Mapping[str, str], context: Context) -> World:
    texts = dict(context.sources.modules)
    if context.upstream is not None:
        texts[context.upstream.module] = context.upstream.text
    texts.update({_dotted(context.package, name): text for name, text in modules.items()})
    packages = {name.rsplit(".", i)[0] for name in texts for i in range(1, name.count(".") + 1)}
    return World(texts, context.sources.packages, frozenset(packages))


# --- 3. imports -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ImportRef:
    """One imported module or name."""

    path: str
    line: int
    col: int
    #: Absolute dotted module.
    module: str
    #: Name imported from it ("" for ``import module``).
    name: str

    def statement(self) -> str:
        return f"from {self.module} import {self.name}" if self.name else f"import {self.module}"


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _import_findings(
    world: World, trees: Mapping[str, ast.Module], context: Context
) -> Iterator[Finding]:
    unverified: dict[str, list[_ImportRef]] = {}
    for name, tree in trees.items():
        package = world.package_of(_dotted(context.package, name))
        for ref in _import_refs(name, tree, package):
            if isinstance(ref, Finding):
                yield ref
            elif ref.module.split(".")[0] not in context.checked_packages:
                continue
            elif not world.verifiable(ref.module):
                unverified.setdefault(ref.module.split(".")[0], []).append(ref)
            elif (problem := unresolved(world, ref.module, ref.name)) is not None:
                message = f"`{ref.statement()}` does not resolve: {problem}"
                yield Finding(Code.OP505, name, ref.line, message, ref.col)
    for top, refs in sorted(unverified.items()):
        yield _unverified_note(top, refs)


def _unverified_note(top: str, refs: list[_ImportRef]) -> Finding:
    first = min(refs, key=lambda r: (r.path, r.line, r.col))
    message = f"unverified: source of {top} not available ({len(refs)} imports not checked)"
    return Finding(Code.OP506, first.path, first.line, message, first.col, Severity.NOTE)


def _import_refs(path: str, tree: ast.Module, package: str) -> Iterator[_ImportRef | Finding]:
    """Every unguarded import of ``tree`` (a try that catches ImportError guards one)."""
    for node, guarded in _import_nodes(tree.body):
        if guarded:
            continue
        col = node.col_offset + 1
        if isinstance(node, ast.Import):
            yield from (_ImportRef(path, node.lineno, col, a.name, "") for a in node.names)
            continue
        module = absolute_module(node, package)
        if module is None:
            message = f"relative import beyond the top of package {package or '(none)'}"
            yield Finding(Code.OP505, path, node.lineno, message, col)
            continue
        for alias in node.names:
            name = "" if alias.name == "*" else alias.name
            yield _ImportRef(path, node.lineno, col, module, name)


def _import_nodes(
    body: Sequence[ast.AST], guarded: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, guarded
        elif isinstance(node, ast.Try | ast.TryStar):
            yield from _import_nodes(node.body, guarded or _catches_import_error(node))
            yield from _import_nodes([*node.handlers, *node.orelse, *node.finalbody], guarded)
        elif isinstance(node, STATEMENTS):
            yield from _import_nodes(list(ast.iter_child_nodes(node)), guarded)


def _catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(dotted_name(k).rpartition(".")[2] in _IMPORT_ERRORS for k in kinds):
            return True
    return False


# --- 4. block binding -----------------------------------------------------------------------


def _binding_findings(
    path: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    originals: Mapping[tuple[str, str], Function],
) -> tuple[list[Finding], frozenset[tuple[str, int]]]:
    """OP507 findings, and the (name, line) reads they explain (pyflakes need not repeat them).

    ``originals`` maps (class, method) of a copy to its upstream method: a read whose
    hazard the upstream method shares (it reads the same name where that is not bound on
    every path either) is a note, not an error: the copy inherits it.
    """
    findings: list[Finding] = []
    covered: set[tuple[str, int]] = set()
    module_level = module_exports(tree)
    for chain, members in _blocks_by_function(tree, blocks):
        lines = frozenset(line for b in members for line in range(b.start, b.end + 1))
        unbound = unbound_reads(chain, module_level, lines)
        for block in members:
            original = originals.get((block.owner, block.member))
            inherited = hazards(original) if original is not None else frozenset()
            names = {n.id for n in unbound if block.start <= n.lineno <= block.end}
            findings.extend(_unbound_finding(path, block, n, n in inherited) for n in names)
        covered.update((n.id, n.lineno) for n in unbound)
    return findings, frozenset(covered)


def _unbound_finding(path: str, block: Placement, name: str, inherited: bool) -> Finding:
    message = f"block {block.block_id} reads `{name}`, which is not bound on every path before it"
    if not inherited:
        return Finding(Code.OP507, path, block.start, message)
    message += " (the upstream method has the same hazard)"
    return Finding(Code.OP507, path, block.start, message, 1, Severity.NOTE)


def _originals(
    world: World, upstream: Upstream | None, overrides: Sequence[Override]
) -> dict[tuple[str, str], Function]:
    """The upstream method of each copied method, by (class, method) of the copy."""
    tree = world.tree(upstream.module) if upstream is not None else None
    if tree is None:
        return {}
    found: dict[tuple[str, str], Function] = {}
    for override in overrides:
        holder: ast.Module | ast.ClassDef | None = tree
        if override.upstream_owner:
            holder = module_class(tree, override.upstream_owner)
        node = find_def(holder.body, override.upstream_name) if holder is not None else None
        if isinstance(node, FUNCTIONS):
            found[(override.owner, override.name)] = node
    return found


def _blocks_by_function(
    tree: ast.Module, blocks: Sequence[Placement]
) -> list[tuple[list[Function], list[Placement]]]:
    """Blocks grouped by the function they sit in, with its enclosing functions (outermost
    first). Blocks outside any function (class level) are left out: class scopes are not
    analysed."""
    functions = sorted(
        (n for n in ast.walk(tree) if isinstance(n, FUNCTIONS)), key=lambda n: n.lineno
    )
    groups: dict[int, tuple[list[Function], list[Placement]]] = {}
    for block in blocks:
        chain = [f for f in functions if f.lineno < block.start <= (f.end_lineno or 0)]
        if chain:
            groups.setdefault(id(chain[-1]), (chain, []))[1].append(block)
    return list(groups.values())


# --- 5a. overrides --------------------------------------------------------------------------


def _override_findings(
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
        message = f"unverified: {where} not found in what could be read; {_unread(unknown)}"
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


# --- 5b. attributes -------------------------------------------------------------------------


def _attribute_findings(
    world: World,
    name: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    overrides: Sequence[Override],
    context: Context,
) -> Iterator[Finding]:
    """``self.<attr>`` reads of placed blocks, per class: errors when every class involved
    could be read, one note per class otherwise."""
    upstream = context.upstream.module if context.upstream is not None else ""
    loads = [n for n in ast.walk(tree) if is_self_attribute(n) and isinstance(n.ctx, ast.Load)]
    for owner in sorted({b.owner for b in blocks if b.owner}):
        cls = module_class(tree, owner)
        if cls is None:
            continue
        uppers = sorted({o.upstream_owner for o in overrides if o.owner == owner} - {""})
        generated = Class(_dotted(context.package, name), cls)
        hierarchy = _owner_hierarchy(world, generated, upstream, uppers)
        reads = [r for b in blocks if b.owner == owner for r in _self_reads(loads, b)]
        yield from _missing_attributes(name, [*uppers, owner], hierarchy, reads)


def _owner_hierarchy(world: World, cls: Class, upstream: str, uppers: Sequence[str]) -> Hierarchy:
    """The generated class's bases plus those of the upstream classes its copies come from."""
    hierarchies = [class_hierarchy(world, cls)]
    for upper in uppers if upstream else ():
        found = lookup_class(world, upstream, upper)
        if isinstance(found, Class):
            hierarchies.append(class_hierarchy(world, found))
        elif found is not None:
            hierarchies.append(Hierarchy((), (found,)))
    classes = tuple(c for h in hierarchies for c in h.classes)
    unknown = tuple(dict.fromkeys(u for h in hierarchies for u in h.unknown))
    return Hierarchy(classes, unknown)


@dataclass(frozen=True, slots=True)
class _Read:
    """A name or ``self`` attribute a block reads."""

    name: str
    line: int
    col: int
    block: Placement


def _self_reads(loads: Sequence[ast.Attribute], block: Placement) -> Iterator[_Read]:
    for node in loads:
        if block.start <= node.lineno <= block.end:
            yield _Read(node.attr, node.lineno, node.col_offset + 1, block)


def _missing_attributes(
    path: str, classes: Sequence[str], hierarchy: Hierarchy, reads: Sequence[_Read]
) -> Iterator[Finding]:
    known = [class_names(c.node) for c in hierarchy.classes]
    if any(k.open for k in known):
        return
    defined = frozenset().union(*(k.names for k in known))
    missing: dict[tuple[str, str], _Read] = {}
    for read in sorted(reads, key=lambda r: (r.line, r.name)):
        if read.name not in defined:
            missing.setdefault((read.block.block_id, read.name), read)
    if hierarchy.unknown and missing:
        first = min(missing.values(), key=lambda r: r.line)
        names = ", ".join(f"`self.{n}`" for n in sorted({r.name for r in missing.values()}))
        message = (
            f"unverified: blocks of {classes[-1]} read {names}, which no class that could be "
            f"read defines; {_unread(hierarchy.unknown)}"
        )
        yield Finding(Code.OP506, path, first.line, message, first.col, Severity.NOTE)
        return
    owners = " or ".join(dict.fromkeys(classes))
    for (block_id, attr), read in missing.items():
        message = (
            f"block {block_id} reads `self.{attr}`, which {owners} (and their bases) "
            "no longer assign or define"
        )
        yield Finding(Code.OP509, path, read.line, message, read.col)


def _unread(unknown: Sequence[str]) -> str:
    return "could not read " + ", ".join(unknown)
