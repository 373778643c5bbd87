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
import builtins
import functools
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from omni_port.model import Code, Copy, Finding, PatchSet, Placement, Severity, Status
from omni_port.names import issues

# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PackageSources:
    """Source text of the packages imports and base classes are checked against."""

    #: Text by dotted module name: ``pkg`` is ``pkg/__init__.py``, ``pkg.sub`` is
    #: ``pkg/sub.py`` or ``pkg/sub/__init__.py``. May hold single modules of other packages
    #: (e.g. the file of an upstream base class) for class lookups.
    modules: Mapping[str, str] = field(default_factory=dict)
    #: Top-level packages whose every module is in ``modules``: there, a missing module or
    #: name is an error; elsewhere it cannot be verified.
    packages: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class UpstreamInfo:
    """The upstream module the copied members come from."""

    #: Dotted module name, e.g. ``vllm_ascend.worker.model_runner_v1``.
    module: str
    #: Its source text.
    text: str


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
    sources: PackageSources = PackageSources()
    #: The upstream module of the copies; without it, overrides are not checked.
    upstream: UpstreamInfo | None = None
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


def module_names(files: Mapping[str, str]) -> dict[str, str]:
    """Source texts keyed by dotted module name, from texts keyed by relative ``.py`` path."""
    named = {}
    for path, text in files.items():
        if path.endswith(".py"):
            parts = path.removesuffix(".py").replace("\\", "/").split("/")
            if parts[-1] == "__init__":
                parts.pop()
            named[".".join(parts)] = text
    return named


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
        broken = _compile_findings(name, modules[name])
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


def _compile_findings(name: str, text: str) -> list[Finding]:
    try:
        compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = f"does not compile: {exc.msg}"
        return [Finding("syntax", Code.OP501, name, exc.lineno or 1, message, exc.offset or 1)]
    except ValueError as exc:  # null bytes
        return [Finding("syntax", Code.OP501, name, 1, f"does not compile: {exc}")]
    return []


# --- 2. names (pyflakes) --------------------------------------------------------------------


def _name_findings(
    name: str, text: str, allowed: frozenset[str], covered: frozenset[tuple[str, int]]
) -> Iterator[Finding]:
    """pyflakes' findings, minus undefined names a block-binding finding already explains."""
    for issue in issues(text, name):
        if issue.kind == "undefined" and (issue.name, issue.line) not in covered:
            message = f"undefined name `{issue.name}`"
            yield Finding("undefined-name", Code.OP502, name, issue.line, message, issue.col)
        elif issue.kind == "redefinition":
            yield Finding("redefinition", Code.OP503, name, issue.line, issue.message, issue.col)
        elif issue.kind == "unused-import" and issue.name not in allowed:
            message = f"`{issue.name}` is imported but unused after splicing"
            yield Finding("unused-import", Code.OP504, name, issue.line, message, issue.col)


# --- module sources -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _World:
    """Every module text the checks may read, by dotted name."""

    texts: Mapping[str, str]
    #: Top-level packages whose sources are complete.
    covered: frozenset[str]
    #: Every dotted name with modules below it.
    packages: frozenset[str]

    def tree(self, module: str) -> ast.Module | None:
        """The module's syntax tree; None when its text is not given or does not parse."""
        text = self.texts.get(module)
        return None if text is None else _parse(text)

    def exists(self, module: str) -> bool:
        return module in self.texts or module in self.packages

    def verifiable(self, module: str) -> bool:
        """Whether a missing name in ``module`` is a certain error."""
        if module in self.texts:
            return self.tree(module) is not None
        return module.split(".")[0] in self.covered

    def package_of(self, module: str) -> str:
        """The package relative imports of ``module`` start from."""
        return module if module in self.packages else module.rpartition(".")[0]


def _world(modules: Mapping[str, str], context: Context) -> _World:
    texts = dict(context.sources.modules)
    if context.upstream is not None:
        texts[context.upstream.module] = context.upstream.text
    texts.update({_dotted(context.package, name): text for name, text in modules.items()})
    packages = {name.rsplit(".", i)[0] for name in texts for i in range(1, name.count(".") + 1)}
    return _World(texts, context.sources.packages, frozenset(packages))


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class _Names:
    """Names a module or class defines."""

    names: frozenset[str]
    #: A star import or ``__getattr__`` makes any name possible.
    open: bool


@functools.lru_cache(maxsize=256)
def _exports(tree: ast.Module) -> _Names:
    names = _scope_bindings(tree.body) | _dunder_all(tree)
    star = any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        for node in _scope_nodes(tree.body)
    )
    return _Names(frozenset(names), star or "__getattr__" in names)


def _dunder_all(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = getattr(node, "value", None)
            names.update(
                n.value
                for n in ast.walk(value or ast.Constant(None))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
    return names


# --- scopes ---------------------------------------------------------------------------------

_COMPREHENSIONS = ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
_FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef
_Function = ast.FunctionDef | ast.AsyncFunctionDef
#: Nodes that hold statements: statements, handlers and match cases.
_STATEMENTS = ast.stmt | ast.ExceptHandler | ast.match_case


def _same_scope_children(node: ast.AST) -> list[ast.AST]:
    """Children evaluated in the scope of ``node`` (not a nested body or comprehension)."""
    if isinstance(node, _FUNCTIONS | ast.Lambda):
        defaults = [d for d in node.args.kw_defaults if d is not None]
        decorators: list[ast.expr] = node.decorator_list if isinstance(node, _FUNCTIONS) else []
        return [*decorators, *node.args.defaults, *defaults]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    if isinstance(node, _COMPREHENSIONS):
        return [node.generators[0].iter]
    return list(ast.iter_child_nodes(node))


def _scope_nodes(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node of one scope, in source order."""
    for node in body:
        yield node
        yield from _scope_nodes(_same_scope_children(node))


def _scope_bindings(body: Sequence[ast.AST]) -> set[str]:
    """Names a scope binds anywhere (assignments, defs, imports, handlers, captures)."""
    names: set[str] = set()
    for node in _scope_nodes(body):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, _FUNCTIONS | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(_import_bindings(node))
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _import_bindings(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    return [a.asname or a.name for a in node.names if a.name != "*"]


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
    world: _World, trees: Mapping[str, ast.Module], context: Context
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
            elif (problem := _unresolved(world, ref.module, ref.name)) is not None:
                message = f"`{ref.statement()}` does not resolve: {problem}"
                yield Finding("unresolved-import", Code.OP505, name, ref.line, message, ref.col)
    for top, refs in sorted(unverified.items()):
        yield _unverified_note(top, refs)


def _unverified_note(top: str, refs: list[_ImportRef]) -> Finding:
    first = min(refs, key=lambda r: (r.path, r.line, r.col))
    message = f"unverified: source of {top} not available ({len(refs)} imports not checked)"
    return Finding(
        "unverified", Code.OP506, first.path, first.line, message, first.col, Severity.NOTE
    )


def _import_refs(path: str, tree: ast.Module, package: str) -> Iterator[_ImportRef | Finding]:
    """Every unguarded import of ``tree`` (a try that catches ImportError guards one)."""
    for node, guarded in _import_nodes(tree.body):
        if guarded:
            continue
        col = node.col_offset + 1
        if isinstance(node, ast.Import):
            yield from (_ImportRef(path, node.lineno, col, a.name, "") for a in node.names)
            continue
        module = _absolute(node, package)
        if module is None:
            message = f"relative import beyond the top of package {package or '(none)'}"
            yield Finding("unresolved-import", Code.OP505, path, node.lineno, message, col)
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
        elif isinstance(node, _STATEMENTS):
            yield from _import_nodes(list(ast.iter_child_nodes(node)), guarded)


def _catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(_dotted_name(k).rpartition(".")[2] in _IMPORT_ERRORS for k in kinds):
            return True
    return False


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    """The absolute module of ``from ... import``; None when it climbs above the top."""
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    if node.level - 1 >= len(parts):
        return None
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _unresolved(world: _World, module: str, name: str) -> str | None:
    """Why ``from module import name`` (or ``import module``) fails; None when it resolves."""
    if not world.exists(module):
        return f"module {module} does not exist"
    if not name or world.exists(f"{module}.{name}"):
        return None
    tree = world.tree(module)
    if tree is None:
        return f"package {module} has no module {name}"
    exports = _exports(tree)
    if exports.open or name in exports.names:
        return None
    return f"{module} does not define {name}"


def _dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for a chain of attributes on a name, "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted_name(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


# --- classes --------------------------------------------------------------------------------

#: Bases known to add no attribute a runner reads.
_PLAIN_BASES = frozenset(
    {"object", "builtins.object", "typing.NamedTuple", "typing.Generic", "typing.Protocol"}
    | {"abc.ABC", "typing_extensions.Protocol"}
)


@dataclass(frozen=True, slots=True)
class _Class:
    #: Dotted module the class is defined in.
    module: str
    node: ast.ClassDef


@dataclass(frozen=True, slots=True)
class _Hierarchy:
    """A class and the bases that could be read."""

    #: Classes found, the class itself first, then its bases depth-first, left to right.
    classes: tuple[_Class, ...]
    #: Bases whose source is not available, as dotted names.
    unknown: tuple[str, ...]


def _lookup(world: _World, module: str, dotted: str, depth: int = 0) -> _Class | str | None:
    """The class ``dotted`` names in ``module``: a class, None for a plain base, or the
    dotted name of what could not be read."""
    tree = world.tree(module)
    head, _, rest = dotted.partition(".")
    if tree is None or depth > 20:
        return f"{module}.{dotted}"
    found = _module_class(tree, head) if not rest else None
    if found is not None:
        return _Class(module, found)
    target = _import_target(tree, head, world.package_of(module))
    if target is None:
        return None if dotted in _PLAIN_BASES and not rest else f"{module}.{dotted}"
    qualified = f"{target}.{rest}" if rest else target
    if qualified in _PLAIN_BASES:
        return None
    owner, _, name = qualified.rpartition(".")
    return _lookup(world, owner, name, depth + 1) if owner else qualified


def _import_target(tree: ast.Module, name: str, package: str) -> str | None:
    """The dotted name the module-level import binding ``name`` refers to."""
    target = None
    for node in _scope_nodes(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    target = alias.name if alias.asname else name
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            for alias in node.names:
                if (alias.asname or alias.name) == name and module is not None:
                    target = f"{module}.{alias.name}" if module else alias.name
    return target


def _hierarchy(world: _World, start: _Class) -> _Hierarchy:
    classes: list[_Class] = []
    unknown: list[str] = []
    pending = [start]
    while pending:
        current = pending.pop(0)
        if any(c.node is current.node for c in classes):
            continue
        classes.append(current)
        for base in current.node.bases:
            expr = base.value if isinstance(base, ast.Subscript) else base
            dotted = _dotted_name(expr)
            found = _lookup(world, current.module, dotted) if dotted else ast.unparse(expr)
            if isinstance(found, _Class):
                pending.append(found)
            elif found is not None:
                unknown.append(found)
    return _Hierarchy(tuple(classes), tuple(dict.fromkeys(unknown)))


@functools.lru_cache(maxsize=64)
def _class_names(node: ast.ClassDef) -> _Names:
    """Class-level names plus every ``self.<attr>`` its methods assign."""
    names = _scope_bindings(node.body)
    for sub in ast.walk(node):
        if _is_self_attribute(sub) and not isinstance(sub.ctx, ast.Load):
            names.add(sub.attr)
        elif (assigned := _setattr_name(sub)) is not None:
            names.add(assigned)
    return _Names(frozenset(names), bool({"__getattr__", "__getattribute__"} & names))


def _is_self_attribute(node: ast.AST) -> TypeGuard[ast.Attribute]:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _setattr_name(node: ast.AST) -> str | None:
    """The attribute ``setattr(self, "name", ...)`` assigns."""
    if not isinstance(node, ast.Call) or _dotted_name(node.func) != "setattr":
        return None
    if len(node.args) < 2 or _dotted_name(node.args[0]) != "self":
        return None
    name = node.args[1]
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _member(classes: Sequence[_Class], name: str) -> ast.stmt | None:
    """The first definition of ``name`` along ``classes``."""
    for cls in classes:
        found = _definition(cls.node.body, name)
        if found is not None:
            return found
    return None


def _module_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    """The class ``name`` defined at module level (also under ``if`` or ``try``)."""
    found = None
    for node in _scope_nodes(tree.body):
        if isinstance(node, ast.ClassDef) and node.name == name:
            found = node
    return found


def _definition(body: Sequence[ast.stmt], name: str) -> ast.stmt | None:
    found = None
    for node in body:
        if isinstance(node, _FUNCTIONS | ast.ClassDef) and node.name == name:
            found = node
    return found


# --- 4. block binding -----------------------------------------------------------------------

#: Names visible in every module without a binding.
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}

#: Definitely-bound names at a point of a function; None where the point is unreachable.
_State = frozenset[str] | None


def _binding_findings(
    path: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    originals: Mapping[tuple[str, str], _Function],
) -> tuple[list[Finding], frozenset[tuple[str, int]]]:
    """OP507 findings, and the (name, line) reads they explain (pyflakes need not repeat them).

    ``originals`` maps (class, method) of a copy to its upstream method: a read whose
    hazard the upstream method shares (it reads the same name where that is not bound on
    every path either) is a note, not an error: the copy inherits it.
    """
    findings: list[Finding] = []
    covered: set[tuple[str, int]] = set()
    module_names = _exports(tree)
    for chain, members in _blocks_by_function(tree, blocks):
        unbound = _unbound_reads(chain, module_names, members)
        for block in members:
            original = originals.get((block.owner, block.member))
            inherited = _hazards(original) if original is not None else frozenset()
            names = {n.id for n in unbound if block.start <= n.lineno <= block.end}
            findings.extend(_unbound_finding(path, block, n, n in inherited) for n in names)
        covered.update((n.id, n.lineno) for n in unbound)
    return findings, frozenset(covered)


def _unbound_finding(path: str, block: Placement, name: str, inherited: bool) -> Finding:
    message = f"block {block.block_id} reads `{name}`, which is not bound on every path before it"
    if not inherited:
        return Finding("unbound-local", Code.OP507, path, block.start, message)
    message += " (the upstream method has the same hazard)"
    return Finding("unbound-local", Code.OP507, path, block.start, message, 1, Severity.NOTE)


@functools.lru_cache(maxsize=64)
def _hazards(function: _Function) -> frozenset[str]:
    """Locals ``function`` itself reads somewhere they are not bound on every path."""
    lines = frozenset(range(function.lineno, (function.end_lineno or function.lineno) + 1))
    flow = _Flow(frozenset(_locals(function)), lines)
    flow.suite(function.body, frozenset(_parameters(function.args)))
    return frozenset(n.id for n in flow.unbound)


def _originals(
    world: _World, upstream: UpstreamInfo | None, overrides: Sequence[Override]
) -> dict[tuple[str, str], _Function]:
    """The upstream method of each copied method, by (class, method) of the copy."""
    tree = world.tree(upstream.module) if upstream is not None else None
    if tree is None:
        return {}
    found: dict[tuple[str, str], _Function] = {}
    for override in overrides:
        holder: ast.Module | ast.ClassDef | None = tree
        if override.upstream_owner:
            holder = _module_class(tree, override.upstream_owner)
        node = _definition(holder.body, override.upstream_name) if holder is not None else None
        if isinstance(node, _FUNCTIONS):
            found[(override.owner, override.name)] = node
    return found


def _blocks_by_function(
    tree: ast.Module, blocks: Sequence[Placement]
) -> list[tuple[list[_Function], list[Placement]]]:
    """Blocks grouped by the function they sit in, with its enclosing functions (outermost
    first). Blocks outside any function (class level) are left out: class scopes are not
    analysed."""
    functions = sorted(
        (n for n in ast.walk(tree) if isinstance(n, _FUNCTIONS)), key=lambda n: n.lineno
    )
    groups: dict[int, tuple[list[_Function], list[Placement]]] = {}
    for block in blocks:
        chain = [f for f in functions if f.lineno < block.start <= (f.end_lineno or 0)]
        if chain:
            groups.setdefault(id(chain[-1]), (chain, []))[1].append(block)
    return list(groups.values())


def _unbound_reads(
    chain: Sequence[_Function], module_names: _Names, blocks: Sequence[Placement]
) -> list[ast.Name]:
    """Reads, on the blocks' lines, of a local name not definitely bound where it is read.

    A name the function never binds and nothing else defines (no global, builtin or
    enclosing local) counts as a local that is never bound.
    """
    function = chain[-1]
    local = _locals(function)
    lines = frozenset(line for b in blocks for line in range(b.start, b.end + 1))
    reads = {n.id for node in function.body for n in _reads(node) if n.lineno in lines}
    visible = set().union(*(_locals(f) for f in chain[:-1])) | _BUILTINS
    lost = set() if module_names.open else reads - local - visible - module_names.names
    flow = _Flow(frozenset(local | lost), lines)
    flow.suite(function.body, frozenset(_parameters(function.args)))
    return flow.unbound


def _parameters(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}


def _locals(function: _Function) -> set[str]:
    """Names local to a function: parameters and names bound in its body, minus declarations."""
    body = function.body
    declared = {
        name
        for node in _scope_nodes(body)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for name in node.names
    }
    return (_parameters(function.args) | _scope_bindings(body)) - declared


def _reads(node: ast.AST, shadow: frozenset[str] = frozenset()) -> Iterator[ast.Name]:
    """Names ``node`` reads in its own scope (annotations and nested bodies are not read).

    A comprehension reads in the enclosing scope whatever its own targets do not shadow.
    """
    if isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Store) and node.id not in shadow:
            yield node
        return
    target = node.target if isinstance(node, ast.AugAssign) else None
    if isinstance(target, ast.Name) and target.id not in shadow:
        yield target
    if isinstance(node, _COMPREHENSIONS):
        shadow = shadow | {n for g in node.generators for n in _stores(g.target)}
        children: list[ast.AST] = list(ast.iter_child_nodes(node))
    elif isinstance(node, _FUNCTIONS | ast.Lambda | ast.ClassDef):
        children = _same_scope_children(node)
    elif isinstance(node, ast.AnnAssign):
        children = [node.target, *([node.value] if node.value else [])]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _reads(child, shadow)


def _stores(target: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _binds(node: ast.stmt) -> set[str]:
    """Names a simple statement binds when it completes."""
    if isinstance(node, ast.Assign):
        return set().union(*(_stores(t) for t in node.targets)) | _walrus(node.value)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        bound = _stores(node.target) if node.value is not None else set()
        return bound | (_walrus(node.value) if node.value is not None else set())
    if isinstance(node, ast.Import | ast.ImportFrom):
        return set(_import_bindings(node))
    if isinstance(node, _FUNCTIONS | ast.ClassDef):
        return {node.name}
    return _walrus(node)


def _walrus(node: ast.AST) -> set[str]:
    """Names bound by ``:=`` wherever evaluation certainly reaches (not after ``and``/``or``,
    not in a branch of ``x if c else y``, not in comprehensions or lambdas)."""
    if isinstance(node, ast.NamedExpr):
        return {node.target.id} | _walrus(node.value)
    if isinstance(node, _COMPREHENSIONS | ast.Lambda | _FUNCTIONS | ast.ClassDef):
        return set()
    if isinstance(node, ast.BoolOp):
        return _walrus(node.values[0])
    if isinstance(node, ast.IfExp):
        return _walrus(node.test)
    return set().union(
        *(_walrus(c) for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
    )


def _any_walrus(node: ast.AST) -> set[str]:
    return {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)}


def _deleted(body: Sequence[ast.AST]) -> set[str]:
    return {
        n.id
        for node in body
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)
    }


def _breaks(body: Sequence[ast.AST]) -> bool:
    """Whether a ``break`` in ``body`` leaves the loop that owns ``body``."""
    for node in body:
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, _FUNCTIONS | ast.ClassDef):
            continue
        # A nested loop keeps the breaks of its body, not those of its else clause.
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            inner: list[ast.AST] = list(node.orelse)
        else:
            inner = [c for c in ast.iter_child_nodes(node) if isinstance(c, _STATEMENTS)]
        if _breaks(inner):
            return True
    return False


def _meet(*states: _State) -> _State:
    """Names bound on every reachable path."""
    reachable = [s for s in states if s is not None]
    return frozenset.intersection(*reachable) if reachable else None


def _header(node: ast.stmt) -> list[ast.AST]:
    """The parts of a statement evaluated before any of its bodies."""
    if isinstance(node, ast.If | ast.While):
        return [node.test]
    if isinstance(node, ast.For | ast.AsyncFor):
        return [node.iter, node.target]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [
            part for item in node.items for part in (item.context_expr, item.optional_vars) if part
        ]
    if isinstance(node, ast.Try | ast.TryStar):
        return []
    if isinstance(node, ast.Match):
        return [node.subject]
    return [node]


class _Flow:
    """Definite-binding walk over one function body.

    Records every read, on lines in ``lines``, of a name in ``local`` that is not bound on
    every path reaching it. Sound by construction (a name counts as bound only when every
    path binds it), at the price of some conservatism: loop bodies bind nothing after the
    loop, and a ``with`` body is assumed not to have its exceptions suppressed.
    """

    def __init__(self, local: frozenset[str], lines: frozenset[int]) -> None:
        self.local = local
        self.lines = lines
        self.unbound: list[ast.Name] = []

    def suite(self, body: Sequence[ast.stmt], state: _State) -> _State:
        for node in body:
            if state is None:
                return None
            state = self.stmt(node, state)
        return state

    def check(self, parts: Sequence[ast.AST], state: frozenset[str]) -> None:
        same_statement = set().union(*(_any_walrus(p) for p in parts))
        for part in parts:
            for name in _reads(part):
                if (
                    name.lineno in self.lines
                    and name.id in self.local
                    and name.id not in state
                    and name.id not in same_statement
                ):
                    self.unbound.append(name)

    def stmt(self, node: ast.stmt, state: frozenset[str]) -> _State:
        self.check(_header(node), state)
        transfer = getattr(self, "_" + type(node).__name__, None)
        if transfer is not None:
            result: _State = transfer(node, state)
            return result
        if isinstance(node, ast.Return | ast.Raise | ast.Break | ast.Continue):
            return None
        if isinstance(node, ast.Delete):
            return state - _deleted([node])
        return state | _binds(node)

    def _If(self, node: ast.If, state: frozenset[str]) -> _State:
        entry = state | _walrus(node.test)
        return _meet(self.suite(node.body, entry), self.suite(node.orelse, entry))

    def _For(self, node: ast.For | ast.AsyncFor, state: frozenset[str]) -> _State:
        entry = state | _walrus(node.iter)
        entry -= _deleted(node.body)
        self.suite(node.body, entry | _stores(node.target))
        return self._loop_exit(node, entry)

    _AsyncFor = _For

    def _While(self, node: ast.While, state: frozenset[str]) -> _State:
        entry = (state | _walrus(node.test)) - _deleted(node.body)
        self.suite(node.body, entry)
        return self._loop_exit(node, entry)

    def _loop_exit(self, node: ast.For | ast.AsyncFor | ast.While, entry: frozenset[str]) -> _State:
        """After a loop: its ``else`` ran, unless a ``break`` may have skipped it."""
        after_else = self.suite(node.orelse, entry)
        return entry if _breaks(node.body) else after_else

    def _With(self, node: ast.With | ast.AsyncWith, state: frozenset[str]) -> _State:
        bound = set().union(*(_walrus(p) | _stores(p) for p in _header(node)))
        return self.suite(node.body, state | bound)

    _AsyncWith = _With

    def _Try(self, node: ast.Try | ast.TryStar, state: frozenset[str]) -> _State:
        completed = self.suite(node.orelse, self.suite(node.body, state))
        raised = state - _deleted(node.body)
        outcomes = [completed, *(self._handler(h, raised) for h in node.handlers)]
        if not node.finalbody:
            return _meet(*outcomes)
        everything = [*node.body, *node.handlers, *node.orelse]
        final = self.suite(node.finalbody, state - _deleted(everything))
        after = _meet(*outcomes)
        return None if after is None or final is None else after | final

    _TryStar = _Try

    def _handler(self, handler: ast.ExceptHandler, state: frozenset[str]) -> _State:
        if handler.type is not None:
            self.check([handler.type], state)
        name = {handler.name} if handler.name else set()
        out = self.suite(handler.body, state | name)
        return None if out is None else out - name

    def _Match(self, node: ast.Match, state: frozenset[str]) -> _State:
        entry = state | _walrus(node.subject)
        outcomes: list[_State] = []
        for case in node.cases:
            bound = entry | _scope_bindings([case.pattern])
            if case.guard is not None:
                self.check([case.guard], bound)
                bound |= _walrus(case.guard)
            outcomes.append(self.suite(case.body, bound))
        last = node.cases[-1]
        irrefutable = isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
        if not irrefutable or last.guard is not None:
            outcomes.append(entry)
        return _meet(*outcomes)


# --- 5a. overrides --------------------------------------------------------------------------


def _override_findings(
    world: _World,
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    upstream: UpstreamInfo | None,
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
        return _definition(tree.body, override.name)
    owner = _module_class(tree, override.owner)
    return _definition(owner.body, override.name) if owner is not None else None


def _override_finding(
    world: _World, module: str, override: Override, ours: ast.stmt
) -> Iterator[Finding]:
    theirs, unknown = _upstream_member(world, module, override)
    where = f"{override.upstream_owner}.{override.upstream_name}".lstrip(".")
    mine = f"{override.owner}.{override.name}".lstrip(".")
    line, col = ours.lineno, ours.col_offset + 1
    if theirs is None and unknown:
        message = f"unverified: {where} not found in what could be read; {_unread(unknown)}"
        yield Finding("unverified", Code.OP506, override.module, line, message, col, Severity.NOTE)
    elif theirs is None:
        message = f"{mine} copies {where}, which no longer exists upstream"
        yield Finding("override", Code.OP508, override.module, line, message, col)
    elif isinstance(theirs, _FUNCTIONS) and isinstance(ours, _FUNCTIONS):
        problem = _signature_problem(theirs.args, ours.args)
        if problem is not None:
            message = f"{mine} does not match the signature of {where}: {problem}"
            yield Finding("override", Code.OP508, override.module, line, message, col)


def _upstream_member(
    world: _World, module: str, override: Override
) -> tuple[ast.stmt | None, tuple[str, ...]]:
    """The upstream definition (searched along the class's bases) and the unreadable bases."""
    tree = world.tree(module)
    if tree is None:
        return None, (module,)
    if not override.upstream_owner:
        return _definition(tree.body, override.upstream_name), ()
    owner = _module_class(tree, override.upstream_owner)
    if owner is None:
        return None, ()
    hierarchy = _hierarchy(world, _Class(module, owner))
    return _member(hierarchy.classes, override.upstream_name), hierarchy.unknown


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
    world: _World,
    name: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    overrides: Sequence[Override],
    context: Context,
) -> Iterator[Finding]:
    """``self.<attr>`` reads of placed blocks, per class: errors when every class involved
    could be read, one note per class otherwise."""
    upstream = context.upstream.module if context.upstream is not None else ""
    loads = [n for n in ast.walk(tree) if _is_self_attribute(n) and isinstance(n.ctx, ast.Load)]
    for owner in sorted({b.owner for b in blocks if b.owner}):
        cls = _module_class(tree, owner)
        if cls is None:
            continue
        uppers = sorted({o.upstream_owner for o in overrides if o.owner == owner} - {""})
        generated = _Class(_dotted(context.package, name), cls)
        hierarchy = _owner_hierarchy(world, generated, upstream, uppers)
        reads = [r for b in blocks if b.owner == owner for r in _self_reads(loads, b)]
        yield from _missing_attributes(name, [*uppers, owner], hierarchy, reads)


def _owner_hierarchy(
    world: _World, cls: _Class, upstream: str, uppers: Sequence[str]
) -> _Hierarchy:
    """The generated class's bases plus those of the upstream classes its copies come from."""
    hierarchies = [_hierarchy(world, cls)]
    for upper in uppers if upstream else ():
        found = _lookup(world, upstream, upper)
        if isinstance(found, _Class):
            hierarchies.append(_hierarchy(world, found))
        elif found is not None:
            hierarchies.append(_Hierarchy((), (found,)))
    classes = tuple(c for h in hierarchies for c in h.classes)
    unknown = tuple(dict.fromkeys(u for h in hierarchies for u in h.unknown))
    return _Hierarchy(classes, unknown)


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
    path: str, classes: Sequence[str], hierarchy: _Hierarchy, reads: Sequence[_Read]
) -> Iterator[Finding]:
    known = [_class_names(c.node) for c in hierarchy.classes]
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
        yield Finding("unverified", Code.OP506, path, first.line, message, first.col, Severity.NOTE)
        return
    owners = " or ".join(dict.fromkeys(classes))
    for (block_id, attr), read in missing.items():
        message = (
            f"block {block_id} reads `self.{attr}`, which {owners} (and their bases) "
            "no longer assign or define"
        )
        yield Finding("missing-attribute", Code.OP509, path, read.line, message, read.col)


def _unread(unknown: Sequence[str]) -> str:
    return "could not read " + ", ".join(unknown)
