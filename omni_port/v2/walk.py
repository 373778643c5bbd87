"""A static walk through a composed runner's class chain: what one method call runs.

``walk(world, "OmniARModelRunner", "execute_model")`` resolves the method along the
class's MRO (generated classes, the NPU class, vLLM's class, all read with ``ast``), then
follows, from each definition it reaches, the calls that stay in the method's family:
``super().name(...)`` (the next definition in the MRO), ``self.name(...)`` and
``self._omni_name(...)`` (from the top of the MRO) and ``Class.name(self, ...)``. Each
call site counts once (the walk is path-insensitive), so "the NPU wrapper runs exactly
once" is a count of visits.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from omni_port.pyast.packages import c3_linearization
from omni_port.pyast.parser import module_or_none
from omni_port.v2.wrap import body_name

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Deeper than any real chain; a cycle of calls stops here.
_DEPTH = 12


@dataclass(frozen=True, slots=True)
class Known:
    """A class of the world: where it is, its bases and its methods."""

    name: str
    module: str
    bases: tuple[str, ...]
    methods: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef]


@dataclass(frozen=True, slots=True)
class Visit:
    """One definition a call reaches; ``parent`` is the index of the visit that called it."""

    owner: str
    name: str
    module: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    parent: int | None


class World:
    """Classes by name, from every module given (name -> text), first definition wins."""

    def __init__(self, modules: Mapping[str, str]) -> None:
        self.classes: dict[str, Known] = {}
        for module, text in modules.items():
            tree = module_or_none(text)
            for node in tree.body if tree is not None else ():
                if isinstance(node, ast.ClassDef) and node.name not in self.classes:
                    self.classes[node.name] = _known(node, module)

    def mro(self, name: str) -> list[str]:
        known = self.classes.get
        return c3_linearization(name, lambda n: c.bases if (c := known(n)) else (), lambda n: n)

    def resolve(self, start: str, name: str, after: str = "") -> Known | None:
        """The class whose ``name`` a call on a ``start`` instance reaches (past ``after``)."""
        order = self.mro(start)
        if after in order:
            order = order[order.index(after) + 1 :]
        for cls in order:
            known = self.classes.get(cls)
            if known is not None and name in known.methods:
                return known
        return None


def _known(node: ast.ClassDef, module: str) -> Known:
    bases = tuple(
        b.id if isinstance(b, ast.Name) else b.attr
        for b in node.bases
        if isinstance(b, ast.Name | ast.Attribute)
    )
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for member in node.body:
        if isinstance(member, _FUNCTIONS):
            methods.setdefault(member.name, member)
    return Known(node.name, module, bases, methods)


def walk(world: World, runner: str, name: str) -> list[Visit]:
    """Every definition a call of ``runner().name(...)`` runs, callers first."""
    visits: list[Visit] = []
    first = world.resolve(runner, name)
    if first is None:
        return visits
    pending: list[tuple[Known, str, int | None, int]] = [(first, name, None, 0)]
    family = {name, body_name(name)}
    while pending:
        known, method, parent, depth = pending.pop(0)
        node = known.methods[method]
        visits.append(Visit(known.name, method, known.module, node, parent))
        here = len(visits) - 1
        if depth >= _DEPTH:
            continue
        for target in _calls(world, runner, known, node, family):
            pending.append((*target, here, depth + 1))
    return visits


def _calls(
    world: World,
    runner: str,
    known: Known,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    family: set[str],
) -> Iterator[tuple[Known, str]]:
    for call in own_calls(node):
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in family:
            continue
        target: Known | None = None
        if _is_super(func.value):
            target = world.resolve(runner, func.attr, after=known.name)
        elif isinstance(func.value, ast.Name) and func.value.id == "self":
            target = world.resolve(runner, func.attr)
        elif isinstance(func.value, ast.Name) and func.value.id in world.classes:
            target = world.resolve(func.value.id, func.attr)
        if target is not None:
            yield target, func.attr


def own_calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls of a function's own body, in order; nested functions run elsewhere."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, ast.Call):
            yield child
        yield from own_calls(child)


def _is_super(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def statement_keys(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A method's statements, normalized: simple statements whole, compound ones by header."""
    keys: list[str] = []
    for stmt in _own_statements(node):
        keys.append(_header(stmt))
    return keys


def _own_statements(node: ast.AST) -> Iterator[ast.stmt]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*_FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(child, ast.stmt):
            yield child
        yield from _own_statements(child)


def _header(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.If | ast.While):
        return f"{type(stmt).__name__} {ast.unparse(stmt.test)}"
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}"
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return "with " + ", ".join(ast.unparse(i) for i in stmt.items)
    if isinstance(stmt, ast.Try):
        return "try"
    return ast.unparse(stmt)


def holds(
    node: ast.FunctionDef | ast.AsyncFunctionDef, of: ast.FunctionDef | ast.AsyncFunctionDef
) -> float:
    """Share of ``of``'s statements that ``node`` holds (a copy of ``of`` holds most). A
    copy that calls omni's renamed override where ``of`` called ``super()`` holds that call:
    in a two-statement wrapper it is half of what the copy is."""
    theirs = statement_keys(of)
    if not theirs:
        return 0.0
    renamed = f"self.{body_name(of.name)}("
    mine = [k.replace(renamed, f"super().{of.name}(") for k in statement_keys(node)]
    found = 0
    for key in theirs:
        if key in mine:
            mine.remove(key)
            found += 1
    return found / len(theirs)


#: A definition holding this share of the NPU override's statements is a copy of it.
COPY_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class Runs:
    """What one call of a method of a composed runner runs, by role."""

    visits: tuple[Visit, ...]
    #: Visits of the NPU override itself or of a copy of it (the NPU wrapper, a splice).
    npu: tuple[int, ...]
    #: Visits of omni's override kept under its new name (``_omni_<name>``).
    bodies: tuple[int, ...]

    def inside(self, inner: int, outer: int) -> bool:
        """Whether visit ``inner`` is reached through visit ``outer``."""
        parent = self.visits[inner].parent
        while parent is not None:
            if parent == outer:
                return True
            parent = self.visits[parent].parent
        return False


def runs(world: World, runner: str, name: str, npu_class: str, generated: set[str]) -> Runs:
    """The walk of ``runner().name(...)`` with the NPU override's runs and omni's renamed
    override's runs picked out; ``generated`` are the modules whose definitions may be
    copies of the NPU override."""
    visits = tuple(walk(world, runner, name))
    npu = world.classes.get(npu_class)
    original = npu.methods.get(name) if npu is not None else None
    found = [
        index
        for index, visit in enumerate(visits)
        if visit.owner == npu_class
        or (
            original is not None
            and visit.name == name
            and visit.module in generated
            and holds(visit.node, original) >= COPY_SHARE
        )
    ]
    bodies = [index for index, visit in enumerate(visits) if visit.name == body_name(name)]
    return Runs(visits, tuple(found), tuple(bodies))
