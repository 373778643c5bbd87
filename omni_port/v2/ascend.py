"""What vllm-ascend installs around its V2 runner: the names its patch_v2 modules replace.

vllm-ascend does not only subclass vLLM's V2 runner: at worker start
(``vllm_ascend/patch/worker/__init__.py``) its ``patch_v2`` modules assign module globals of
vLLM (``model_runner.InputBatch = AscendInputBatch``, ``upstream.dispatch_cg_and_sync_dp =
...``) and methods of vLLM's classes. vLLM's runner then calls vllm-ascend's objects; code
that imports the originals itself (as omni's V2 runners do) still calls vLLM's. Its V2
runner also redirects ``torch.cuda`` to ``torch.npu`` (``torch_cuda_wrapper``, entered in
``NPUModelRunner.__init__`` and never undone), which is what makes omni's ``torch.cuda``
streams and events run on the NPU.

Everything is read as text (``ast``); nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

#: The package whose modules are the V2 patches.
PATCH_PACKAGE = "vllm_ascend/patch/worker/patch_v2/"
#: The module that imports the worker patches at worker start.
PATCH_INDEX = "vllm_ascend/patch/worker/__init__.py"
#: The context manager of the V2 runner that redirects torch.cuda to torch.npu.
CUDA_WRAPPER = "torch_cuda_wrapper"

#: (module, name): an object as an import statement reaches it.
Ref = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Substitution:
    """A vLLM module global a vllm-ascend patch module replaces."""

    #: Where vLLM's object comes from: the module that defines it and its name there.
    original: Ref
    #: The module global the patch assigns (often the same object, re-exported).
    target: Ref
    #: What the patch installs, as an import reaches it.
    replacement: Ref
    #: The patch module and the line of the assignment.
    path: str
    line: int
    #: Why the generated code must not rely on it ("" when it may): the patch module is
    #: imported only on some hardware, or the replacement is bound conditionally.
    doubt: str = ""


@dataclass(frozen=True, slots=True)
class ClassPatch:
    """A method or attribute of a vLLM class a patch module replaces."""

    #: The class, as its module and name.
    owner: Ref
    attribute: str
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class CudaRedirect:
    """The ``torch.cuda`` attributes vllm-ascend's V2 runner points at ``torch.npu``."""

    #: Attribute names of ``torch.cuda`` it assigns.
    names: frozenset[str]
    #: Where the context manager is defined.
    path: str
    line: int
    #: ``NPUModelRunner.__init__`` enters it, so it holds once a runner exists.
    entered: bool


@dataclass(frozen=True, slots=True)
class AscendPatches:
    """Everything vllm-ascend installs that the composed runners rely on or must call."""

    substitutions: tuple[Substitution, ...] = ()
    class_patches: tuple[ClassPatch, ...] = ()
    cuda: CudaRedirect | None = None

    def replacing(self, ref: Ref) -> Substitution | None:
        """The substitution whose original (or patched module global) ``ref`` is."""
        return next((s for s in self.substitutions if ref in (s.original, s.target)), None)


@dataclass(frozen=True, slots=True)
class VllmRunner:
    """vLLM's V2 runner module: its dotted name and the names it imports."""

    module: str
    #: name -> (module, name) it is imported from.
    imports: Mapping[str, Ref]


def read_patches(texts: Mapping[str, str], vllm: VllmRunner, npu_runner: str = "") -> AscendPatches:
    """The patches of a vllm-ascend tree (member path -> text) and its torch.cuda redirect.

    A patch of a global of vLLM's runner module (``vllm``) replaces the object that module
    imported, so an import of that object elsewhere is what the patch bypasses.
    ``npu_runner`` is the V2 runner module's text (for the torch.cuda redirect it enters).
    Texts that do not parse are skipped: they cannot install anything code could name.
    """
    installed = _installed_modules(texts.get(PATCH_INDEX, ""))
    substitutions: list[Substitution] = []
    class_patches: list[ClassPatch] = []
    for path in sorted(texts):
        if not path.startswith(PATCH_PACKAGE) or not path.endswith(".py"):
            continue
        module = _parse(texts[path])
        if module is None:
            continue
        doubt = installed.get(_dotted(path), "not imported by " + PATCH_INDEX)
        for found in _assignments(module, path, vllm):
            if isinstance(found, ClassPatch):
                class_patches.append(found)
            elif doubt and not found.doubt:
                substitutions.append(_with_doubt(found, doubt))
            else:
                substitutions.append(found)
    return AscendPatches(tuple(substitutions), tuple(class_patches), _cuda(texts, npu_runner))


def _with_doubt(found: Substitution, doubt: str) -> Substitution:
    return Substitution(
        found.original, found.target, found.replacement, found.path, found.line, doubt
    )


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _installed_modules(index: str) -> dict[str, str]:
    """Patch modules the index imports: "" for every worker, else why only some."""
    module = _parse(index)
    found: dict[str, str] = {}
    if module is None:
        return found
    for stmt, guarded in _top_statements(module):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                found.setdefault(alias.name, "imported only on some hardware" if guarded else "")
    return found


def _top_statements(module: ast.Module) -> Iterator[tuple[ast.stmt, bool]]:
    """Module-level statements, those inside an ``if``/``try`` flagged as conditional."""
    for stmt in module.body:
        if isinstance(stmt, ast.If | ast.Try):
            for inner in ast.walk(stmt):
                if isinstance(inner, ast.stmt) and inner is not stmt:
                    yield inner, True
        else:
            yield stmt, False


def _bindings(module: ast.Module, path: str) -> dict[str, list[Ref]]:
    """What each module-level name of a patch module refers to (more than one: conditional)."""
    here = _dotted(path)
    found: dict[str, list[Ref]] = {}
    for stmt, _ in _top_statements(module):
        for name, ref in _bound_by(stmt, here):
            refs = found.setdefault(name, [])
            if ref not in refs:
                refs.append(ref)
    return found


def _bound_by(stmt: ast.stmt, here: str) -> Iterator[tuple[str, Ref]]:
    if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
        for alias in stmt.names:
            yield alias.asname or alias.name, (stmt.module, alias.name)
    elif isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                yield alias.asname, (alias.name, "")
            else:
                top = alias.name.split(".")[0]
                yield top, (top, "")
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield stmt.name, (here, stmt.name)


def _class_of(head: Ref, attributes: list[str]) -> Ref | None:
    """The class whose attribute an assignment target is (``Cls.attr``, ``mod.Cls.attr``);
    None for a module global. Classes are told by their capital initial (PEP 8)."""
    if len(attributes) == 1 and head[1][:1].isupper():
        return head
    if len(attributes) >= 2 and attributes[-2][:1].isupper():
        return ".".join([_module_of(head), *attributes[:-2]]), attributes[-2]
    return None


def _module_of(ref: Ref) -> str:
    """The dotted module a binding names when it is a module (``from P import mod``)."""
    module, name = ref
    return f"{module}.{name}" if name else module


def _assignments(
    module: ast.Module, path: str, vllm: VllmRunner
) -> Iterator[Substitution | ClassPatch]:
    """Every ``module.attr = value`` (and ``module.Class.attr = value``) at module level."""
    bindings = _bindings(module, path)
    for stmt in module.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        chain = _chain(stmt.targets[0])
        if chain is None or chain[0] not in bindings or len(bindings[chain[0]]) != 1:
            continue
        owner = _class_of(bindings[chain[0]][0], chain[1:])
        if owner is not None:
            yield ClassPatch(owner, chain[-1], path, stmt.lineno)
            continue
        parts = [_module_of(bindings[chain[0]][0]), *chain[1:]]
        target = (".".join(parts[:-1]), parts[-1])
        value = _value(stmt.value, bindings)
        if value is None:
            continue
        replacement, doubt = value
        original = vllm.imports.get(target[1], target) if target[0] == vllm.module else target
        yield Substitution(original, target, replacement, path, stmt.lineno, doubt)


def _chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything but a dotted attribute."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return None
    return [node.id, *reversed(parts)]


def _value(node: ast.expr, bindings: Mapping[str, list[Ref]]) -> tuple[Ref, str] | None:
    if not isinstance(node, ast.Name) or node.id not in bindings:
        return None
    refs = bindings[node.id]
    if len(refs) > 1:
        choices = " or ".join(f"{m}.{n}" for m, n in refs)
        return refs[0], f"bound conditionally ({choices})"
    return refs[0], ""


def vllm_runner(text: str, module: str) -> VllmRunner:
    """vLLM's runner module (its text) with the names it imports from other modules."""
    parsed = _parse(text)
    found: dict[str, Ref] = {}
    for stmt in parsed.body if parsed is not None else []:
        for name, ref in _bound_by(stmt, module):
            if ref[1] and ref[0] != module:
                found.setdefault(name, ref)
    return VllmRunner(module, found)


# --- torch.cuda -> torch.npu --------------------------------------------------------------


def _cuda(texts: Mapping[str, str], npu_runner: str) -> CudaRedirect | None:
    """The redirect the NPU runner imports, and whether its ``__init__`` enters it."""
    runner = _parse(npu_runner)
    if runner is None:
        return None
    source = next(
        (
            stmt.module
            for stmt in runner.body
            if isinstance(stmt, ast.ImportFrom)
            and stmt.module
            and any(a.name == CUDA_WRAPPER for a in stmt.names)
        ),
        None,
    )
    if source is None:
        return None
    path = source.replace(".", "/") + ".py"
    module = _parse(texts.get(path, ""))
    function = next(
        (
            n
            for n in (module.body if module else [])
            if isinstance(n, ast.FunctionDef) and n.name == CUDA_WRAPPER
        ),
        None,
    )
    if function is None:
        return None
    return CudaRedirect(frozenset(_redirected(function)), path, function.lineno, _entered(runner))


def _redirected(function: ast.FunctionDef) -> Iterator[str]:
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                chain = _chain(target)
                if chain is not None and chain[:2] == ["torch", "cuda"] and len(chain) == 3:
                    yield chain[2]


def _entered(runner: ast.Module) -> bool:
    """Whether a class's ``__init__`` runs ``with torch_cuda_wrapper():``."""
    for node in ast.walk(runner):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for inner in ast.walk(node):
                if isinstance(inner, ast.With) and any(
                    isinstance(i.context_expr, ast.Call)
                    and isinstance(i.context_expr.func, ast.Name)
                    and i.context_expr.func.id == CUDA_WRAPPER
                    for i in inner.items
                ):
                    return True
    return False
