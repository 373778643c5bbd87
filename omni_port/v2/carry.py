"""Carry a function of omni's own modules into a generated module: to call what vllm-ascend
installs.

omni's V2 runner swaps vLLM's ``init_model_state`` for omni's factory while it loads the
model; the factory (``vllm_omni/worker_v2/model_states/__init__.py``) falls through to
vLLM's ``init_model_state``, imported by name, so on the NPU every model that is not an
omni model gets vLLM's model state instead of the one vllm-ascend's patch installs
(``init_asecnd_model_state``, with Ascend's ``prepare_attn``). Rewriting the runner alone
cannot reach that: the fall-through is in another module.

So a function that a runner module imports from a ``vllm_omni`` module, and whose body
reads a vLLM object a vllm-ascend patch replaces, is carried into the generated module:
its text verbatim, the imports it needs from its module (the replaced one imports what the
patch installs, tagged ``ascend-patch`` by ``rewrite``), and the runner's import of it
dropped. One level only: what that function calls in turn is not followed.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from omni_port.model import Chunk, Origin, Rule
from omni_port.pyast.parser import module_or_none
from omni_port.v2 import rewrite
from omni_port.v2.ascend import AscendPatches

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True, slots=True)
class Carried:
    """A function of an omni module, carried into a generated module."""

    name: str
    #: The omni module it comes from (dotted) and its member path and line there.
    module: str
    path: str
    line: int
    #: Its definition, decorators included, as written.
    code: str
    #: The import statements it needs that the generated module lacks, one name each.
    imports: tuple[str, ...]
    #: The replaced vLLM objects it reads, ``module.name``.
    replaced: tuple[str, ...]

    def chunk(self, options: rewrite.Options) -> Chunk:
        """The carried code as a module-level piece, rewritten and tagged."""
        what = (
            f"{self.name} of {self.path}:{self.line}, carried here so that it calls what "
            "vllm-ascend's patches install"
        )
        text = (
            "\n\n"
            + rewrite.tag(Rule.ASCEND_PATCH, what)
            + f"\n# (it reads {', '.join(self.replaced)}).\n"
            + "".join(line + "\n" for line in self.imports)
            + "\n\n"
            + self.code
        )
        code = rewrite.rewrite(text, options)
        origin = Origin(self.path, self.line, self.line + self.code.count("\n"))
        return Chunk(f"carried.{self.name}", "", self.name, code, origin)


def find(head: str, texts: Mapping[str, str], patches: AscendPatches) -> tuple[Carried, ...]:
    """The functions a module's import chunk ``head`` imports from omni modules (``texts``:
    omni's package by member path) that read an object vllm-ascend's patches replace."""
    parsed = module_or_none(head)
    if parsed is None:
        return ()
    postponed = any(
        isinstance(s, ast.ImportFrom)
        and s.module == "__future__"
        and any(a.name == "annotations" for a in s.names)
        for s in parsed.body
    )
    bound = _Bound(
        module_bindings(parsed, ""), module_bindings(_type_checking(parsed), ""), postponed
    )
    found: list[Carried] = []
    for stmt in parsed.body:
        if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
            continue
        if not stmt.module.startswith("vllm_omni."):
            continue
        for alias in stmt.names:
            if alias.asname not in (None, alias.name):
                continue
            carried = _carried(stmt.module, alias.name, texts, patches, bound)
            if carried is not None:
                found.append(carried)
    return tuple(found)


def _carried(
    module: str,
    name: str,
    texts: Mapping[str, str],
    patches: AscendPatches,
    bound: _Bound,
) -> Carried | None:
    path, text = _module_text(module, texts)
    parsed = module_or_none(text)
    if parsed is None:
        return None
    function = next(
        (n for n in parsed.body if isinstance(n, ast.FunctionDef) and n.name == name), None
    )
    if function is None:
        return None
    theirs = module_bindings(parsed, module)
    runtime = free_names(function) & set(theirs)
    if not bound.postponed:
        runtime |= _annotation_names(function) & set(theirs)
    free = sorted((runtime | _annotation_names(function)) & set(theirs))
    replaced = [theirs[n] for n in free if _replaced(theirs[n], patches)]
    if not replaced:
        return None
    needed = [n for n in free if not bound.has(n, theirs[n], n in runtime)]
    if any(bound.clashes(n, theirs[n], n in runtime) for n in needed):
        return None  # the generated module binds one of its names otherwise: not carried
    imports = tuple(theirs[n].split("\0")[1] for n in needed)
    lines = text.splitlines()
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    code = "".join(line + "\n" for line in lines[first - 1 : function.end_lineno])
    return Carried(
        name,
        module,
        path,
        function.lineno,
        code,
        imports,
        tuple(r.split("\0")[0] for r in replaced),
    )


def _replaced(binding: str, patches: AscendPatches) -> bool:
    module, _, name = binding.split("\0")[0].rpartition(".")
    found = patches.replacing((module, name))
    return found is not None and not found.doubt


def _module_text(module: str, texts: Mapping[str, str]) -> tuple[str, str]:
    base = module.replace(".", "/")
    for path in (f"{base}.py", f"{base}/__init__.py"):
        if path in texts:
            return path, texts[path]
    return "", ""


def module_bindings(module: ast.Module, dotted: str) -> dict[str, str]:
    """Module-level names: ``source.name\\0statement``, the statement that binds each."""
    found: dict[str, str] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for alias in stmt.names:
                local = alias.asname or alias.name
                text = f"from {stmt.module} import {alias.name}" + (
                    f" as {alias.asname}" if alias.asname else ""
                )
                found[local] = f"{stmt.module}.{alias.name}\0{text}"
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                text = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                found[local] = f"{alias.name if alias.asname else local}\0{text}"
        elif dotted:
            for name in _defined(stmt):
                found[name] = f"{dotted}.{name}\0from {dotted} import {name}"
    return found


def _defined(stmt: ast.stmt) -> list[str]:
    """Names a module-level statement defines (a function, a class, a constant)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [stmt.name]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    if isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


@dataclass(frozen=True, slots=True)
class _Bound:
    """The names a generated module's import chunk binds: at run time, and only for
    annotations (under ``if TYPE_CHECKING:``)."""

    runtime: Mapping[str, str]
    typing: Mapping[str, str]
    #: ``from __future__ import annotations``: annotations are not evaluated.
    postponed: bool

    def has(self, name: str, binding: str, at_runtime: bool) -> bool:
        """Whether ``name`` is bound as ``binding`` where the carried function needs it."""
        if self.runtime.get(name) == binding:
            return True
        return not at_runtime and self.typing.get(name) == binding

    def clashes(self, name: str, binding: str, at_runtime: bool) -> bool:
        """Whether importing ``name`` would redefine what the module binds."""
        return (
            name in self.runtime
            or (name in self.typing and at_runtime)
            or (name in self.typing and self.typing[name] != binding)
        )


def _type_checking(module: ast.Module) -> ast.Module:
    """The statements under a module-level ``if TYPE_CHECKING:``, as a module: a name bound
    there is bound for annotations, and importing it again at run time would redefine it."""
    body: list[ast.stmt] = []
    for stmt in module.body:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test).endswith("TYPE_CHECKING"):
            body.extend(stmt.body)
    return ast.Module(body=body, type_ignores=[])


def _annotation_ids(function: ast.FunctionDef) -> set[int]:
    args = function.args
    roots = [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    roots += [a.annotation for a in (args.vararg, args.kwarg) if a is not None]
    roots.append(function.returns)
    return {id(n) for root in roots if root is not None for n in ast.walk(root)}


def _annotation_names(function: ast.FunctionDef) -> set[str]:
    """Names the signature's annotations read (not evaluated under postponed annotations,
    but a checker still wants them bound)."""
    names: set[str] = set()
    args = function.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None and arg.annotation is not None:
            names.update(n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name))
    if function.returns is not None:
        names.update(n.id for n in ast.walk(function.returns) if isinstance(n, ast.Name))
    return names


def free_names(function: ast.FunctionDef) -> set[str]:
    """Names a function reads at run time that it does not bind (parameters, assignments,
    imports); annotations of its signature are not read at run time."""
    loaded: set[str] = set()
    stored: set[str] = set()
    annotations = _annotation_ids(function)
    for node in ast.walk(function):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
        elif isinstance(node, ast.alias):
            stored.add(node.asname or node.name.split(".")[0])
        elif (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node is not function
        ):
            stored.add(node.name)
    return loaded - stored - _BUILTINS


def without_imports(head: str, carried: Sequence[Carried]) -> str:
    """The import chunk without its imports of the carried functions (they are defined
    below it now)."""
    names = {(c.module, c.name) for c in carried}
    try:
        module = cst.parse_module(head)
    except cst.ParserSyntaxError:
        return head
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        kept = _without(stmt, names)
        if kept is not None:
            body.append(kept)
    return module.with_changes(body=body).code


def _without(stmt: cst.BaseStatement, names: set[tuple[str, str]]) -> cst.BaseStatement | None:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return stmt
    node = stmt.body[0]
    if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
        return stmt
    module = cst.Module([]).code_for_node(node.module) if node.module is not None else ""
    aliases = [
        a
        for a in node.names
        if (module, cst.Module([]).code_for_node(a.name)) not in names or a.asname is not None
    ]
    if len(aliases) == len(node.names):
        return stmt
    if not aliases:
        return None
    aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return stmt.with_changes(body=[node.with_changes(names=aliases)])
