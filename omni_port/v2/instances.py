"""The objects vllm-ascend's V2 runner builds in place of vLLM's: a use of vLLM's class there.

Beside its patches (``ascend``), vllm-ascend's ``NPUModelRunner`` installs its own objects
in two ways no patch module shows:

- its ``__init__`` runs vLLM's, then builds some attributes again with its own classes
  (``self.input_buffers = AscendInputBuffers(...)``, ``AscendRequestState``, its
  ``init_speculator``): read by comparing the ``self.X = Call(...)`` statements of both
  ``__init__`` methods;
- a graph-manager wrapper, a context manager of its runner module entered around vLLM's
  code (``graph_manager_wrapper`` around ``initialize_kv_cache``), sets a vLLM module global
  to a factory of its own (``vllm_model_runner.ModelCudaGraphManager = factory``, which
  builds ``ModelAclGraphManager``) and restores it on exit.

omni code that builds vLLM's class itself (vLLM's ``InputBuffers`` in omni's ``__init__``)
replaces vllm-ascend's object with one that lacks what the NPU code reads: the first step
raises. Each such call in a generated module is an error (OP332). Read as text; nothing is
imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from omni_port.model import Code, Finding
from omni_port.pyast.packages import dotted_name, import_target, module_class
from omni_port.pyast.syntax import find_def

#: The decorator that makes a wrapper a context manager.
_CONTEXT_MANAGER = "contextmanager"


@dataclass(frozen=True, slots=True)
class Installed:
    """An object vllm-ascend's runner builds where vLLM's builds its own."""

    #: vLLM's callable, dotted as an import reaches it (``vllm.v1.worker.gpu.states.RequestState``).
    original: str
    #: vllm-ascend's, dotted the same way.
    replacement: str
    #: How it is installed (``NPUModelRunner.__init__ sets self.req_states``).
    how: str
    #: Where: the NPU runner module and the line.
    path: str
    line: int
    #: The vLLM module global a wrapper sets (another way code reaches the original).
    via: str = ""


def installed(
    npu_text: str, npu_path: str, npu_class: str, base_text: str, base_path: str, base_class: str
) -> tuple[Installed, ...]:
    """What the NPU runner (``npu_class`` in ``npu_text``) installs over vLLM's runner
    (``base_class`` in ``base_text``); paths are member paths (``vllm/.../model_runner.py``)."""
    try:
        npu, base = ast.parse(npu_text), ast.parse(base_text)
    except (SyntaxError, ValueError):
        return ()
    npu_module, base_module = _dotted(npu_path), _dotted(base_path)
    mine = _built(npu, npu_module, npu_class)
    theirs = _built(base, base_module, base_class)
    found = list(_in_init(mine, theirs, npu_class, npu_path))
    found += _wrappers(npu, npu_module, base, base_module, npu_path)
    return tuple(found)


def _dotted(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _in_init(
    mine: Mapping[str, tuple[str, int]],
    theirs: Mapping[str, tuple[str, int]],
    npu_class: str,
    path: str,
) -> Iterator[Installed]:
    """The attributes both ``__init__`` methods build, with different callables."""
    for attribute, (replacement, line) in sorted(mine.items()):
        original = theirs.get(attribute)
        if original is not None and original[0] != replacement:
            how = f"{npu_class}.__init__ sets self.{attribute}"
            yield Installed(original[0], replacement, how, path, line)


def _built(tree: ast.Module, module: str, class_name: str) -> dict[str, tuple[str, int]]:
    """``self.X = f(...)`` of the class's ``__init__``: attribute -> (dotted f, line), the
    last assignment of each."""
    cls = module_class(tree, class_name)
    init = find_def(cls.body, "__init__") if cls is not None else None
    found: dict[str, tuple[str, int]] = {}
    assignments = [
        n
        for n in (ast.walk(init) if init is not None else ())
        if isinstance(n, ast.Assign | ast.AnnAssign)
    ]
    for node in sorted(assignments, key=lambda n: (n.lineno, n.col_offset)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not isinstance(node.value, ast.Call):
            continue
        callee = resolve(tree, module, node.value.func)
        for target in targets:
            if isinstance(target, ast.Attribute) and _self_attribute(target) and callee:
                found[target.attr] = (callee, node.lineno)
    return found


def _self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and dotted_name(node.value) == "self"


def resolve(tree: ast.Module, module: str, node: ast.expr) -> str:
    """The dotted object a name or attribute chain of ``module`` reaches ("" for others)."""
    dotted = dotted_name(node)
    if not dotted:
        return ""
    head, _, rest = dotted.partition(".")
    target = import_target(tree, head, module.rpartition(".")[0])
    if target is None:
        local = module_class(tree, head) or find_def(tree.body, head)
        if head == "self" or local is None:
            return ""
        target = f"{module}.{head}"
    return f"{target}.{rest}" if rest else target


def _wrappers(
    npu: ast.Module, npu_module: str, base: ast.Module, base_module: str, path: str
) -> Iterator[Installed]:
    """The module globals of vLLM a context manager of the NPU module sets to its own."""
    for function in npu.body:
        if not isinstance(function, ast.FunctionDef) or not any(
            dotted_name(d).split(".")[-1] == _CONTEXT_MANAGER for d in function.decorator_list
        ):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0]
            if not isinstance(target, ast.Attribute):
                continue
            owner = resolve(npu, npu_module, target.value)
            replacement = _made_by(function, npu, npu_module, node.value)
            if not owner.startswith("vllm.") or not replacement or replacement.startswith("vllm."):
                continue
            original = f"{owner}.{target.attr}"
            if owner == base_module:
                original = resolve(base, base_module, ast.Name(target.attr)) or original
            how = f"{function.name}() sets {owner}.{target.attr} while it is entered"
            yield Installed(original, replacement, how, path, node.lineno, f"{owner}.{target.attr}")


def _made_by(function: ast.FunctionDef, tree: ast.Module, module: str, value: ast.expr) -> str:
    """What a wrapper installs: a name it imports, or what a factory it defines returns."""
    if isinstance(value, ast.Name):
        local = find_def(function.body, value.id)
        if isinstance(local, ast.FunctionDef):
            returned = [
                n.value.func
                for n in ast.walk(local)
                if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
            ]
            built = {resolve(tree, module, f) for f in returned}
            return built.pop() if len(built) == 1 else ""
    return resolve(tree, module, value)


def findings(parsed: Mapping[str, ast.Module], found: tuple[Installed, ...]) -> Iterator[Finding]:
    """OP332 at each call, in a generated module, of vLLM's callable that vllm-ascend's runner
    replaces with its own."""
    by_original = {name: i for i in found for name in (i.original, i.via) if name}
    for name, tree in sorted(parsed.items()):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            hit = by_original.get(resolve(tree, _generated_module(name), node.func))
            if hit is not None:
                what = (
                    f"{ast.unparse(node.func)}(...) builds vLLM's {hit.original}, where "
                    f"vllm-ascend's runner installs {hit.replacement} ({hit.how}, "
                    f"{hit.path}:{hit.line}): what the NPU code reads of it is missing; "
                    "build vllm-ascend's, or leave it to the NPU runner"
                )
                yield Finding(Code.OP332, name, node.lineno, what, node.col_offset + 1)


def _generated_module(path: str) -> str:
    """A dotted stand-in for a generated module (its relative imports are omni's)."""
    return "vllm_omni.worker_v2." + _dotted(path)
