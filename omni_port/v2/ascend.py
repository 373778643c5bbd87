"""What vllm-ascend installs around its V2 runner: the names its patch_v2 modules replace.

vllm-ascend does not only subclass vLLM's V2 runner: at worker start
(``vllm_ascend/patch/worker/__init__.py``) its ``patch_v2`` modules assign module globals of
vLLM (``model_runner.InputBatch = AscendInputBatch``, ``upstream.dispatch_cg_and_sync_dp =
...``) and methods of vLLM's classes. vLLM's runner then calls vllm-ascend's objects; code
that imports the originals itself (as omni's V2 runners do) still calls vLLM's. Its V2
runner also redirects ``torch.cuda`` to ``torch.npu`` (``torch_cuda_wrapper``, entered in
``NPUModelRunner.__init__`` and never undone), which is what makes omni's ``torch.cuda``
streams and events run on the NPU.

Some of those patches substitute classes: a patched global is a vllm-ascend subclass of
vLLM's class (``AscendInputBatch(InputBatch)``), or a factory whose returns are
(``init_model_state = init_asecnd_model_state``, which builds ``AscendModelState`` where
vLLM builds ``DefaultModelState``). A class of omni's built on the vLLM class runs without
what the subclass adds (``ClassSubstitute``).

Everything is read as text (``ast``); nothing is imported.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.pyast.parser import module_or_none
from omni_port.v2.capture import CommunicatorSwitch, find_switch

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
class ClassSubstitute:
    """A vLLM class whose instances vllm-ascend builds from its own subclass instead."""

    #: vLLM's class and vllm-ascend's subclass, each as its defining module and name.
    original: Ref
    substitute: Ref
    #: Member path of the substitute's module (``vllm_ascend/worker/v2/model_states/default.py``).
    module_path: str
    #: The patch module and line that install it.
    path: str
    line: int
    #: The factory a patch installs that returns it (None: the patch assigns the class).
    factory: Ref | None = None
    #: Other classes the factory returns on other paths (hardware, model kinds) that also
    #: derive from ``original``: a class rebased onto ``substitute`` is not one of them.
    variants: tuple[Ref, ...] = ()
    #: Why no class can be told to be the substitute ("" when one can): the factory returns
    #: several classes built directly on ``original``.
    doubt: str = ""

    @property
    def installed_by(self) -> str:
        """How the substitute reaches vLLM's code, for messages."""
        how = f"{self.path}:{self.line}"
        if self.factory is None:
            return f"assigned by {how}"
        return f"returned by {self.factory[1]}, which {how} installs"


@dataclass(frozen=True, slots=True)
class WarmUp:
    """``NPUWorker.compile_or_warm_up_model``: the runner methods it calls."""

    #: ``self.model_runner.<name>(...)`` calls, in order, each name once.
    calls: tuple[str, ...]
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class AscendPatches:
    """Everything vllm-ascend installs that the composed runners rely on or must call."""

    substitutions: tuple[Substitution, ...] = ()
    class_patches: tuple[ClassPatch, ...] = ()
    cuda: CudaRedirect | None = None
    substitutes: tuple[ClassSubstitute, ...] = ()
    #: Member paths of every vllm-ascend file read, and the sha256 of its text: what the
    #: installed vllm-ascend must still hold for the composition to hold.
    read: tuple[tuple[str, str], ...] = ()
    #: The context manager that lets vLLM's graph capture see the NPU communicator.
    switch: CommunicatorSwitch | None = None
    #: The NPU worker's warm-up, which a generation V2 worker runs with the model steps
    #: skipped (``omni_port.v2.stage.generation_warm_up``).
    warm_up: WarmUp | None = None

    def replacing(self, ref: Ref) -> Substitution | None:
        """The substitution whose original (or patched module global) ``ref`` is."""
        return next((s for s in self.substitutions if ref in (s.original, s.target)), None)

    def installed(self, found: Substitution) -> str:
        """What the patch of ``found`` assigns, as a note says it: every module global it
        sets to the same replacement (``model_runner.InputBatch`` and
        ``cudagraph_utils.InputBatch``), the replacement, and the lines."""
        same = sorted(
            (
                s
                for s in self.substitutions
                if (s.path, s.replacement) == (found.path, found.replacement)
            ),
            key=lambda s: s.line,
        ) or [found]
        targets = " and ".join(dict.fromkeys(".".join(s.target) for s in same))
        lines = ", ".join(str(s.line) for s in same)
        return f"sets {targets} to {'.'.join(found.replacement)} ({found.path}:{lines})"

    def substitute_of(self, ref: Ref) -> ClassSubstitute | None:
        """The substitute of vLLM class ``ref``: named by its defining module, or re-exported
        by a package above it (``vllm.v1.worker.gpu.model_states`` for ``...default``)."""
        return next((s for s in self.substitutes if same_class(ref, s.original)), None)


def same_class(ref: Ref, original: Ref) -> bool:
    """Whether an import of ``ref`` reaches the class ``original`` defines."""
    if ref == original:
        return True
    return ref[1] == original[1] and original[0].startswith(ref[0] + ".")


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
    read = [PATCH_INDEX] if PATCH_INDEX in texts else []
    for path in sorted(texts):
        if not path.startswith(PATCH_PACKAGE) or not path.endswith(".py"):
            continue
        read.append(path)
        module = module_or_none(texts[path])
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
    cuda = _cuda(texts, npu_runner)
    substitutes = tuple(class_substitutes(texts, substitutions))
    switch = find_switch(texts)
    read += [cuda.path] if cuda is not None else []
    read += [switch.path] if switch is not None else []
    warm_up = _warm_up(texts)
    read += [warm_up.path] if warm_up is not None else []
    read += [s.module_path for s in substitutes]
    read += [_module_path(s.factory[0], texts) for s in substitutes if s.factory is not None]
    digests = tuple(sorted({(p, _digest(texts[p])) for p in read if p in texts}))
    return AscendPatches(
        tuple(substitutions), tuple(class_patches), cuda, substitutes, digests, switch, warm_up
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _with_doubt(found: Substitution, doubt: str) -> Substitution:
    return Substitution(
        found.original, found.target, found.replacement, found.path, found.line, doubt
    )


def _dotted(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _installed_modules(index: str) -> dict[str, str]:
    """Patch modules the index imports: "" for every worker, else why only some."""
    module = module_or_none(index)
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
    parsed = module_or_none(text)
    found: dict[str, Ref] = {}
    for stmt in parsed.body if parsed is not None else []:
        for name, ref in _bound_by(stmt, module):
            if ref[1] and ref[0] != module:
                found.setdefault(name, ref)
    return VllmRunner(module, found)


# --- class substitutes -----------------------------------------------------------------------

#: How many vllm-ascend base classes are followed up from a substitute to vLLM's class.
_BASE_DEPTH = 6


def class_substitutes(
    texts: Mapping[str, str], substitutions: Sequence[Substitution]
) -> Iterator[ClassSubstitute]:
    """The vLLM classes the patches substitute: a patched global that is a vllm-ascend
    subclass of the original, and every vLLM class a patched-in factory builds a subclass
    of (one factory level; a substitution in doubt installs nothing for certain)."""
    classes = _Classes(texts)
    seen: set[Ref] = set()
    for substitution in substitutions:
        if substitution.doubt:
            continue
        found = list(_direct(classes, substitution))
        found = found or list(_from_factory(classes, substitution))
        for substitute in found:
            if substitute.original not in seen:
                seen.add(substitute.original)
                yield substitute


def _direct(classes: _Classes, substitution: Substitution) -> Iterator[ClassSubstitute]:
    """``model_runner.InputBatch = AscendInputBatch``, a subclass of vLLM's InputBatch."""
    bases = classes.vllm_bases(substitution.replacement)
    if bases is None or not any(same_class(b, substitution.original) for b, _ in bases):
        return
    yield ClassSubstitute(
        substitution.original,
        substitution.replacement,
        classes.path(substitution.replacement[0]),
        substitution.path,
        substitution.line,
    )


def _from_factory(classes: _Classes, substitution: Substitution) -> Iterator[ClassSubstitute]:
    """The classes a patched-in factory returns, grouped by the vLLM class each derives from:
    the one built directly on it is its substitute, the others (further down) variants."""
    factory = substitution.replacement
    returned = classes.returned(factory)
    built: dict[Ref, list[tuple[Ref, bool]]] = {}
    for cls in returned:
        for base, direct in classes.vllm_bases(cls) or ():
            built.setdefault(base, []).append((cls, direct))
    for original, found in sorted(built.items()):
        onto = [cls for cls, is_direct in found if is_direct]
        if not onto:
            continue
        variants = tuple(cls for cls, _ in found if cls != onto[0])
        doubt = ""
        if len(onto) > 1:
            names = ", ".join(cls[1] for cls in onto)
            doubt = f"{factory[1]} builds {len(onto)} classes directly on it ({names})"
        yield ClassSubstitute(
            original,
            onto[0],
            classes.path(onto[0][0]),
            substitution.path,
            substitution.line,
            factory,
            variants,
            doubt,
        )


def _module_path(dotted: str, texts: Mapping[str, str]) -> str:
    base = dotted.replace(".", "/")
    for path in (f"{base}.py", f"{base}/__init__.py"):
        if path in texts:
            return path
    return ""


class _Classes:
    """vllm-ascend's modules as the substitute search reads them, each parsed once."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = texts
        self.parsed: dict[str, ast.Module | None] = {}

    def path(self, dotted: str) -> str:
        return _module_path(dotted, self.texts)

    def module(self, dotted: str) -> ast.Module | None:
        if dotted not in self.parsed:
            self.parsed[dotted] = module_or_none(self.texts.get(self.path(dotted), ""))
        return self.parsed[dotted]

    def definition(self, ref: Ref) -> ast.ClassDef | ast.FunctionDef | None:
        module = self.module(ref[0])
        for node in module.body if module is not None else ():
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == ref[1]:
                return node
        return None

    def vllm_bases(self, ref: Ref, depth: int = 0) -> list[tuple[Ref, bool]] | None:
        """The vLLM classes a vllm-ascend class derives from, each with whether it is a
        direct base; None when ``ref`` is no class of vllm-ascend's sources."""
        node = self.definition(ref)
        if not isinstance(node, ast.ClassDef):
            return None
        module = self.module(ref[0])
        assert module is not None
        bindings = _bindings(module, self.path(ref[0]))
        found: list[tuple[Ref, bool]] = []
        for base in node.bases:
            target = _resolved(base, bindings)
            if target is None:
                continue
            if target[0].split(".")[0] == "vllm":
                found.append((target, True))
            elif depth < _BASE_DEPTH:
                inner = self.vllm_bases(target, depth + 1) or []
                found.extend((b, False) for b, _ in inner)
        return found

    def returned(self, ref: Ref) -> list[Ref]:
        """The classes a factory function returns an instance of (``return Cls(...)``)."""
        node = self.definition(ref)
        module = self.module(ref[0])
        if not isinstance(node, ast.FunctionDef) or module is None:
            return []
        bindings = _bindings(module, self.path(ref[0]))
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                for alias in inner.names:
                    bindings[alias.asname or alias.name] = [(inner.module, alias.name)]
        found: list[Ref] = []
        for inner in ast.walk(node):
            if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Call):
                target = _resolved(inner.value.func, bindings)
                if target is not None and target not in found:
                    found.append(target)
        return found


def _resolved(node: ast.expr, bindings: Mapping[str, list[Ref]]) -> Ref | None:
    """What a name (or ``module.Name``) refers to, when one binding says so."""
    if isinstance(node, ast.Name):
        refs = bindings.get(node.id, [])
        return refs[0] if len(refs) == 1 and refs[0][1] else None
    chain = _chain(node)
    if chain is None or chain[0] not in bindings or len(bindings[chain[0]]) != 1:
        return None
    parts = [_module_of(bindings[chain[0]][0]), *chain[1:]]
    return ".".join(parts[:-1]), parts[-1]


# --- the NPU worker's warm-up ---------------------------------------------------------------

#: vllm-ascend's worker module, its class and the warm-up method.
WORKER = ("vllm_ascend/worker/worker.py", "NPUWorker", "compile_or_warm_up_model")


def _warm_up(texts: Mapping[str, str]) -> WarmUp | None:
    """The runner methods the NPU worker's warm-up calls; None when it cannot be read."""
    path, class_name, method = WORKER
    module = module_or_none(texts.get(path, ""))
    cls = (
        next(
            (n for n in module.body if isinstance(n, ast.ClassDef) and n.name == class_name),
            None,
        )
        if module is not None
        else None
    )
    function = (
        next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method), None)
        if cls is not None
        else None
    )
    if function is None:
        return None
    calls = sorted(
        (n.lineno, n.col_offset, n.func.attr)
        for n in ast.walk(function)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and _chain(n.func.value) == ["self", "model_runner"]
    )
    return WarmUp(tuple(dict.fromkeys(name for _, _, name in calls)), path, function.lineno)


# --- torch.cuda -> torch.npu --------------------------------------------------------------


def _cuda(texts: Mapping[str, str], npu_runner: str) -> CudaRedirect | None:
    """The redirect the NPU runner imports, and whether its ``__init__`` enters it."""
    runner = module_or_none(npu_runner)
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
    module = module_or_none(texts.get(path, ""))
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
