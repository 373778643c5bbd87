"""Omni classes built on a vLLM class that vllm-ascend substitutes: which, and why one is
not rebased (``rebase`` generates the ones that are).

vllm-ascend builds its own subclasses where vLLM builds its classes: its patch installs
``init_asecnd_model_state`` as vLLM's ``init_model_state``, and that factory builds
``AscendModelState`` where vLLM's builds ``DefaultModelState`` (its ``prepare_attn`` builds
the metadata Ascend's attention backends read; ACL-graph replay, kvpp, sparse KV offload and
``finish_execution`` live on it). omni's factory builds ``OmniModelState(DefaultModelState)``
for every omni model, which on the NPU runs without any of that. The composition rebases
such a class, as it rebases the runner class onto ``NPUModelRunner``:

- omni's module that defines it is generated under its own path below the V2 package
  (``model_states/omni_model_state.py``, served as
  ``vllm_omni.worker_v2.model_states.omni_model_state``), rewritten for the NPU like the
  runner modules (``rewrite``);
- the class's base becomes the substitute, imported from vllm-ascend, and the header says so
  (tag ``substitute``); each method both omni's class and the substitute override is
  composed by the rules of ``decide`` (``omni-super``, ``npu-wrapper``, ``allowed``), else it
  is a conflict region (there is no sync engine to splice hunks into the substitute);
- a class that cannot be rebased (in a runner module, outside the V2 package, a substitute
  in doubt) stays on vLLM's class: an error (OP330) until omni's code changes, or a reviewed
  entry ``module.py:Class.<vLLM class>  reason`` keeps it.

Pure: texts in, the classes found and their findings out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.gpu.parity import AllowEntry
from omni_port.model import Code, Finding, Severity
from omni_port.pyast.parser import module_or_none
from omni_port.v2.ascend import AscendPatches, ClassSubstitute, Ref
from omni_port.v2.decide import allow_of


@dataclass(frozen=True, slots=True)
class Bypass:
    """An omni class built on a vLLM class vllm-ascend substitutes."""

    #: omni's module (member path) and the class, with its line there.
    path: str
    owner: str
    line: int
    #: The base as the module names it, and what it refers to.
    base: str
    original: Ref
    substitute: ClassSubstitute


@dataclass(frozen=True, slots=True)
class Sources:
    """What rebasing reads besides omni's package."""

    patches: AscendPatches
    #: vllm-ascend's substitute modules and vLLM's original modules, by member path.
    classes: Mapping[str, str]
    #: The labels of vllm-ascend and of the vLLM release the NPU runs on.
    npu_label: str
    base_label: str
    allowed: Sequence[AllowEntry] = ()
    #: omni's V2 package directory (``vllm_omni/worker_v2/``): generated paths are below it.
    package_dir: str = "vllm_omni/worker_v2/"


# --- finding the classes --------------------------------------------------------------------


def find(texts: Mapping[str, str], paths: Iterable[str], patches: AscendPatches) -> list[Bypass]:
    """The classes of the modules ``paths`` (member paths of ``texts``) built on a vLLM class
    that ``patches`` substitutes, in path order."""
    found: list[Bypass] = []
    for path in sorted(set(paths)):
        tree = _tree_of(texts.get(path, ""))
        if tree is not None:
            found.extend(bypasses_of(tree, path, patches))
    return found


def bypasses_of(tree: ast.Module, path: str, patches: AscendPatches) -> Iterator[Bypass]:
    """The classes of one parsed module built on a substituted vLLM class."""
    imported = imports_of(tree)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            name = ast.unparse(base)
            ref = _ref(name, imported)
            found = patches.substitute_of(ref) if ref is not None else None
            if found is not None and ref is not None:
                yield Bypass(path, node.name, node.lineno, name, ref, found)


def imports_of(tree: ast.Module) -> dict[str, Ref]:
    """Module-level ``from M import N [as L]`` bindings: L -> (M, N); ``import M`` too."""
    found: dict[str, Ref] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name] = (alias.name, "")
    return found


def _ref(name: str, imported: Mapping[str, Ref]) -> Ref | None:
    head, _, rest = name.partition(".")
    ref = imported.get(head)
    if ref is None:
        return None
    if not rest:
        return ref if ref[1] else None
    module = f"{ref[0]}.{ref[1]}" if ref[1] else ref[0]
    parts = f"{module}.{rest}".split(".")
    return ".".join(parts[:-1]), parts[-1]


def package_paths(texts: Mapping[str, str], package_dir: str) -> list[str]:
    """Member paths of the modules below omni's V2 package."""
    return sorted(p for p in texts if p.startswith(package_dir) and p.endswith(".py"))


def output_path(path: str, package_dir: str) -> str:
    """Where omni's module ``path`` goes in the V2 tree ("" outside the V2 package)."""
    return path.removeprefix(package_dir) if path.startswith(package_dir) else ""


def module_path(dotted: str, texts: Mapping[str, str]) -> str:
    """The member path of a dotted module in ``texts`` ("" when it is not there)."""
    base = dotted.replace(".", "/")
    for path in (f"{base}.py", f"{base}/__init__.py"):
        if path in texts:
            return path
    return ""


# --- why a class cannot be rebased ----------------------------------------------------------


def obstacle(bypass: Bypass, sources: Sources, runner_modules: Iterable[str]) -> str:
    """Why ``bypass`` cannot be rebased here ("" when it can)."""
    substitute = bypass.substitute
    rel = output_path(bypass.path, sources.package_dir)
    if substitute.doubt:
        return f"no one substitute: {substitute.doubt}"
    if not rel:
        return f"{bypass.path} is outside {sources.package_dir}, which the V2 tree stands in for"
    if rel in set(runner_modules):
        return "it is in a runner module (only classes of omni's other modules are rebased)"
    if substitute.module_path not in sources.classes:
        return f"{substitute.module_path} cannot be read"
    if original_path(bypass, sources) == "":
        return f"vLLM's {'.'.join(bypass.original)} cannot be read"
    return ""


def original_path(bypass: Bypass, sources: Sources) -> str:
    return module_path(bypass.substitute.original[0], sources.classes)


# --- findings -------------------------------------------------------------------------------


def bypass_finding(bypass: Bypass, why: str, allow: AllowEntry | None) -> Finding:
    """OP330 for a class left on vLLM's class: an error, or a note when allowed."""
    substitute = bypass.substitute
    message = (
        f"{bypass.owner} is built on {bypass.base} ({'.'.join(bypass.original)}), which "
        f"vllm-ascend substitutes with {substitute.substitute[1]} ({substitute.installed_by}): "
        f"on the NPU it runs without what {substitute.substitute[1]} adds"
    )
    if allow is not None:
        message += f"; kept: {allow.reason} ({allow.path}:{allow.line})"
        return Finding(Code.OP330, bypass.path, bypass.line, message, severity=Severity.NOTE)
    message += f"; not rebased: {why}" if why else ""
    return Finding(Code.OP330, bypass.path, bypass.line, message)


def kept(bypass: Bypass, allowed: Sequence[AllowEntry], package_dir: str) -> AllowEntry | None:
    """The reviewed entry that keeps a class on vLLM's class (``module.py:Class.Base``)."""
    rel = output_path(bypass.path, package_dir) or bypass.path.rpartition("/")[2]
    return allow_of(allowed, rel, bypass.owner, bypass.original[1])


def _tree_of(text: str) -> ast.Module | None:
    return module_or_none(text) if text else None
