"""The one-call switch that makes vLLM-Omni's workers run the generated runners.

vLLM-Omni's workers import their runners by module name
(``vllm_omni.platforms.npu.worker.npu_ar_model_runner`` on NPU,
``vllm_omni.worker.gpu_ar_model_runner`` on GPU) and keep the class in ``model_runner_cls``
or a module global. Which of them a generated tree holds, its lock says (``LAYOUTS``). The
switch installs an import hook that serves those module names from the generated files
instead, so the generated modules also import each other under the names they were
generated with; workers imported earlier get their runner classes rebound. Nothing here
imports vllm, vllm-ascend or torch.

The switch refuses runners that are not deployable: no lock, a lock that lists conflicts,
a tree that ``omni-port verify`` has not passed since the last sync, a module edited after
sync or one the lock does not list, or an installed upstream (vllm-ascend; vLLM for the GPU
runners) other than the one the runners were generated from. An explicit override
(``allow_unresolved=True``, or ``OMNI_PORT_ALLOW_UNRESOLVED=1``) runs them anyway and says
so on stderr.

A V1 tree and a V2 tree are served side by side (``generated/`` and ``generated/v2``):
the NPU workers keep building their V1 runner, and build the composed V2 runner instead
where vLLM-Omni asks for it (a stage whose deploy config says ``model_runner: v2``; see
``omni_port.v2.stage`` for how that and vllm-ascend's ``VLLM_USE_V2_MODEL_RUNNER`` must
agree), through a ``model_runner_cls`` that chooses (``runner_selector``). A V2 tree is
deployable only while the installed vllm-ascend, vLLM-Omni and vLLM hold the files and
releases its lock pins (``omni_port.v2.pins``).

Trees of different packages are served together: vLLM-Omni's NPU runners subclass its GPU
runner, and with an NPU and a GPU tree switched the generated NPU runners subclass the
generated GPU one.

vLLM-Omni starts its workers with ``spawn``: fresh interpreters that do not run the
launcher's ``if __name__ == "__main__":`` block. The one way that reaches them is the
environment: the switch exports ``OMNI_PORT_GENERATED`` (and the override), and omni-port's
vLLM plugin (entry point group ``vllm.general_plugins``, which vLLM loads in every process
it starts) switches every process in which that variable is set.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, new_class

from omni_port.errors import BadInput
from omni_port.model import Layout
from omni_port.patches import lockfile, written
from omni_port.sources.platform import GPU, GPU_V2, NPU, Platform
from omni_port.sources.upstream import ASCEND_V2_RUNNER
from omni_port.v2 import conditions, pins, stage
from omni_port.v2.conditions import Condition
from omni_port.verify import conflicts


@dataclass(frozen=True, slots=True)
class LayoutInfo:
    """What the switch needs of one layout of generated tree: the package it stands in for,
    its runners, and the installed upstream file its lock's ``upstream_sha256`` is of."""

    #: The package of vLLM-Omni the tree's modules stand in for.
    package: str
    #: Generated runner modules and the class each one provides.
    runners: Mapping[str, str]
    #: The upstream distribution the runners were generated onto (checked where installed).
    dist: str
    #: The upstream file they were generated from, inside that distribution.
    member: str


def _platform_layout(platform: Platform) -> LayoutInfo:
    modules = [Path(member).stem for member in platform.runners]
    runners = dict(zip(modules, platform.classes, strict=True))
    return LayoutInfo(platform.package, runners, platform.dist, platform.member)


#: The layouts of a generated tree, by what its lock says it holds (``Lock.layout``).
LAYOUTS: Mapping[Layout, LayoutInfo] = {
    Layout.V1: _platform_layout(NPU),
    # vLLM-Omni's V2 runners are GPU ones; the generated tree composes them with
    # vllm-ascend's V2 NPU runner under the same names.
    Layout.V2: LayoutInfo(
        "vllm_omni.worker_v2",
        {
            "omni_model_runner": "OmniGPUModelRunner",
            "omni_ar_model_runner": "OmniARModelRunner",
            "omni_generation_model_runner": "OmniGenerationModelRunner",
        },
        NPU.dist,
        ASCEND_V2_RUNNER,
    ),
    Layout.GPU: _platform_layout(GPU),
    Layout.GPU_V2: _platform_layout(GPU_V2),
}
#: Package vLLM-Omni keeps its NPU runners in, and the class each runner module provides.
PACKAGE = LAYOUTS[Layout.V1].package
RUNNERS = LAYOUTS[Layout.V1].runners
#: Package vLLM-Omni keeps its Model Runner V2 runners in, and theirs.
V2_PACKAGE = LAYOUTS[Layout.V2].package
V2_RUNNERS = LAYOUTS[Layout.V2].runners
#: Package vLLM-Omni keeps its GPU runners in (the NPU runners subclass its
#: ``OmniGPUModelRunner``), and theirs.
GPU_PACKAGE = LAYOUTS[Layout.GPU].package
GPU_RUNNERS = LAYOUTS[Layout.GPU].runners
#: Environment variable naming the generated directories when no path is given (several
#: separated by ``os.pathsep``); the switch sets it, so that processes started from this one
#: (spawned workers) make the same choice.
ENV = "OMNI_PORT_GENERATED"
#: Environment variable naming the package each of those directories stands in for, when
#: not its layout's (in the same order, separated the same way; an empty entry: the default).
PACKAGE_ENV = "OMNI_PORT_PACKAGE"
#: Environment variable that runs runners that are not deployable ("1"), loudly.
OVERRIDE_ENV = "OMNI_PORT_ALLOW_UNRESOLVED"
#: What makes a generated tree and its lock (in an omni-port checkout: extract, sync, verify).
MAKE_SYNC = "run `make sync` (or `omni-port sync` and `omni-port verify`)"


class NotDeployable(RuntimeError):
    """The generated runners are not fit to run; ``reasons`` says why, one line each."""

    def __init__(self, folder: Path, reasons: Sequence[str]) -> None:
        self.folder = folder
        self.reasons = tuple(reasons)
        lines = "".join(f"\n  - {reason}" for reason in self.reasons)
        super().__init__(
            f"the generated runners in {folder} are not deployable:{lines}\n"
            f"(to run them anyway, which may misbehave: use_generated_runners(..., "
            f"allow_unresolved=True) or {OVERRIDE_ENV}=1)"
        )


@dataclass(frozen=True, slots=True)
class Switched:
    """One generated directory the switch serves, as a call of ``use_generated_runners``
    chose it."""

    folder: Path
    #: The package it was asked to stand in for; "" for its layout's.
    package: str
    #: The trees it serves: its own, and a V2 tree beside it (``served_trees``).
    trees: tuple[Served, ...]

    @property
    def packages(self) -> frozenset[str]:
        return frozenset(tree.package for tree in self.trees)


class GeneratedRunnerFinder(importlib.abc.MetaPathFinder):
    """Serves chosen module names from files in the generated directories."""

    def __init__(self, files: Mapping[str, Path], switched: Sequence[Switched] = ()) -> None:
        #: Full module name -> generated file.
        self.files = dict(files)
        #: The directories served, in the order they were switched.
        self.switched = tuple(switched)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.SourceFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def use_generated_runners(
    directory: str | os.PathLike[str] | None = None,
    package: str | None = None,
    *,
    allow_unresolved: bool = False,
) -> list[str]:
    """Make the runner modules of a generated tree load from ``directory``; returns the
    module names redirected.

    The tree's lock says which runners it holds (``Lock.layout``): the NPU runners stand in
    for ``vllm_omni.platforms.npu.worker``, the GPU runners (``platform = "gpu"``) for
    ``vllm_omni.worker``, a V2 tree (``omni_*_model_runner.py``, and every other module its
    lock lists, such as ``model_states/omni_model_state.py``) for ``vllm_omni.worker_v2``;
    ``package`` overrides that. A V2 tree in a subdirectory (``generated/v2`` beside
    ``generated/``, as ``v2-generated`` places it) is served too, side by side, and the NPU
    workers then build the V2 runners where the stage selects Model Runner V2
    (``runner_selector``). Call it before vLLM-Omni's workers are imported (for example
    first thing in the launcher). Workers imported earlier have their runner classes
    rebound to the generated ones.

    Trees of other packages switched before stay served (an NPU tree and a GPU tree, in
    either order: the generated NPU runners then subclass the generated
    ``OmniGPUModelRunner``, their modules re-imported at each switch); a tree of the same
    package replaces the one switched before. Without ``directory``, every directory
    ``OMNI_PORT_GENERATED`` lists is switched, in order. The choice is exported there for
    the processes this one starts; see the module docstring for spawned workers.

    Raises FileNotFoundError when the directory holds no generated runner, and
    NotDeployable when the runners of any tree served are not deployable (see
    ``unresolved``) unless ``allow_unresolved`` (or ``OMNI_PORT_ALLOW_UNRESOLVED=1``) says
    to run them anyway.
    """
    if directory is None:
        chosen = [(folder, package or listed) for folder, listed in _from_environment()]
    else:
        chosen = [(Path(directory).resolve(), package or "")]
    redirected: set[str] = set()
    for folder, asked in chosen:
        redirected.update(_switch(folder, asked, allow_unresolved))
    return sorted(redirected)


def _switch(folder: Path, package: str, allow_unresolved: bool) -> list[str]:
    """Serve one directory beside what is served already; its module names."""
    layout, info = layout_of(folder)
    default = info.package
    trees = served_trees(folder, package or default)
    files = {name: path for tree in trees for name, path in served_modules(tree).items()}
    if not files:
        # A GPU tree whose lock predates its layout reads as the NPU runners': say so.
        wanted = ", ".join(f"{module}.py" for module in info.runners)
        raise FileNotFoundError(
            f"no generated runner modules in {folder} (layout {layout}: {wanted}): {MAKE_SYNC}"
        )
    overridden = allow_unresolved or os.environ.get(OVERRIDE_ENV) == "1"
    reasons = _tree_reasons(folder, trees)
    if reasons and not overridden:
        raise NotDeployable(folder, reasons)
    if reasons:
        _say_loudly(folder, reasons)
    current = Switched(folder, package if package != default else "", tuple(trees))
    # The trees served before were checked when they were switched; they stay as they were.
    kept = [s for s in _switched() if s.folder != folder and not s.packages & current.packages]
    served = (*kept, current)
    _export(served, overridden)
    _serve(served)
    return sorted(files)


def _switched() -> tuple[Switched, ...]:
    """The directories served now (none when the switch is off)."""
    finder = next((f for f in sys.meta_path if isinstance(f, GeneratedRunnerFinder)), None)
    return finder.switched if finder is not None else ()


def _serve(served: Sequence[Switched]) -> None:
    """Every module of ``served`` freshly imported from its file on first use: one served
    before is imported again, so that it imports the modules served now (an NPU runner
    module the generated GPU runner it subclasses)."""
    trees = [tree for switched in served for tree in switched.trees]
    files = {name: path for tree in trees for name, path in served_modules(tree).items()}
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _OURS)]
    sys.meta_path.insert(0, GeneratedRunnerFinder(files, served))
    for name in files:
        sys.modules.pop(name, None)
    for tree in trees:
        _rebind_workers(tree.package, tree.runners)
    _select_v2_runners(trees)


def _from_environment() -> list[tuple[Path, str]]:
    """The directories ``OMNI_PORT_GENERATED`` lists, each with its ``OMNI_PORT_PACKAGE``
    entry ("" when it has none)."""
    configured = os.environ.get(ENV, "")
    folders = [Path(entry).resolve() for entry in configured.split(os.pathsep) if entry]
    if not folders:
        raise FileNotFoundError(f"pass the generated directory or set ${ENV}")
    packages = os.environ.get(PACKAGE_ENV, "").split(os.pathsep)
    return [(f, packages[n] if n < len(packages) else "") for n, f in enumerate(folders)]


def _export(served: Sequence[Switched], overridden: bool) -> None:
    """Spawned workers start from the environment, not from this process's state."""
    os.environ[ENV] = os.pathsep.join(str(s.folder) for s in served)
    packages = [s.package for s in served]
    if any(packages):
        os.environ[PACKAGE_ENV] = os.pathsep.join(packages)
    else:
        os.environ.pop(PACKAGE_ENV, None)
    if overridden:
        os.environ[OVERRIDE_ENV] = "1"


def vllm_plugin() -> None:
    """vLLM's general plugin (entry point ``vllm.general_plugins``), which vLLM calls in
    every process it starts, spawned workers included: switches when ``OMNI_PORT_GENERATED``
    is set (by the launcher's environment, or by ``use_generated_runners`` in the parent).

    Raises what ``use_generated_runners`` raises: a worker never runs runners that are not
    deployable silently.
    """
    if os.environ.get(ENV):
        use_generated_runners()


def unresolved(directory: str | os.PathLike[str]) -> list[str]:
    """Why the generated runners in ``directory`` are not deployable (empty when they are):
    no lock, conflicts the lock lists, modules that differ from what sync wrote or that it
    does not list, no clean ``omni-port verify`` since the last sync, or an installed
    upstream (vllm-ascend; vLLM for the GPU runners) other than the one they were generated
    from. Reads files only; imports nothing."""
    folder = Path(directory)
    lock_path = folder / lockfile.LOCK_NAME
    if not lock_path.is_file():
        return [f"no {lockfile.LOCK_NAME}: nothing was generated here; {MAKE_SYNC}"]
    try:
        lock_bytes = lock_path.read_bytes()
        lock = lockfile.read(folder)
    except (OSError, BadInput) as error:
        if isinstance(error, BadInput):
            reason = error.findings[0].message
        else:
            reason = error.strerror or str(error)
        return [f"{lockfile.LOCK_NAME} cannot be read ({reason}); {MAKE_SYNC}"]
    reasons = _conflicts(folder, lock)
    reasons += _edited(folder, lock)
    reasons += _unlisted(folder, lock)
    reasons += _verdict(folder, lock_bytes)
    reasons += _installed_upstream(lock)
    reasons += _installed_pins(lock)
    return reasons


def _conflicts(folder: Path, lock: lockfile.Lock) -> list[str]:
    ids = [str(row.get("id", "")) for row in lock.conflicts]
    if not ids:
        return []
    shown = _some(ids)
    if lock.layout is Layout.V2:
        # A V2 conflict is a method left as omni's, under a conflict region, or a hunk of a
        # spliced method; its patches are computed, so `resolve` has nothing to record.
        return [
            f"{len(ids)} conflicts marked in the modules ({shown}): compose each by hand in "
            "vLLM-Omni, or list it in the --v2-allow file, then `omni-port v2-sync`"
        ]
    route = conflicts.routes(lockfile.output_texts(folder, lock), ids)
    return [f"{len(ids)} conflicts left commented out ({shown}): {_routes(ids, route)}"]


def _routes(ids: Sequence[str], route: Mapping[str, conflicts.Route]) -> str:
    """What resolves the conflicts ``ids``: `--at '#K'` names a candidate the region lists,
    and one that lists none, or whose upstream method vanished, is resolved another way."""
    ranked, unlisted, vanished = (
        [ident for ident in ids if route[ident] is kind] for kind in conflicts.Route
    )
    said = []
    if ranked:
        which = "each" if len(ranked) == len(ids) else _some(ranked)
        command = "`omni-port resolve BLOCK --at '#K'`, then `omni-port sync`"
        said.append(f"record {which} with {command}")
    if unlisted:
        said.append(f"{_some(unlisted)} list no candidate place: {conflicts.UNLISTED_ROUTES}")
    if vanished:
        said.append(
            f"the upstream method of {_some(vanished)} vanished: {conflicts.VANISHED_ROUTE}"
        )
    return "; ".join(said)


def _some(ids: Sequence[str]) -> str:
    return ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")


def _edited(folder: Path, lock: lockfile.Lock) -> list[str]:
    """Why the tree is not the one the lock describes: missing, edited by hand, or an
    earlier sync's output under a lock a pull or checkout replaced (this checkout's record
    of what its syncs wrote tells the last two apart)."""
    reasons = []
    for name, state in written.held(folder, lock).items():
        if state is written.Held.MISSING:
            reasons.append(f"{name} is missing: run `omni-port sync`")
        elif state is written.Held.EARLIER:
            reasons.append(
                f"{name} holds what an earlier sync wrote, not what {lockfile.LOCK_NAME} "
                "names (a pull or checkout replaced the lock): run `omni-port sync`"
            )
        elif state is written.Held.EDITED:
            # A hand edit: sync would refuse to overwrite it; continue records it.
            reasons.append(
                f"{name} was edited since sync wrote it: take the edit with `omni-port "
                "continue` (or drop it: `omni-port sync --discard-edits`)"
            )
    return reasons


def _unlisted(folder: Path, lock: lockfile.Lock) -> list[str]:
    """Runner modules the switch would serve that the lock does not list: nothing says
    sync wrote them, so nothing checked them."""
    runners = LAYOUTS[lock.layout].runners
    found = [f"{module}.py" for module in runners if (folder / f"{module}.py").is_file()]
    return [
        f"{name} is not in {lockfile.LOCK_NAME}: `omni-port sync` did not write it; {MAKE_SYNC}"
        for name in found
        if name not in lock.outputs
    ]


def _verdict(folder: Path, lock_bytes: bytes) -> list[str]:
    verdict = lockfile.read_verdict(folder)
    if verdict is None or verdict.lock_sha256 != hashlib.sha256(lock_bytes).hexdigest():
        return ["not verified since the last sync: run `omni-port verify`"]
    if not verdict.problems:
        return []
    first = verdict.problems[0]
    return [f"{len(verdict.problems)} verify problems (the first: {first})"]


def _installed_upstream(lock: lockfile.Lock) -> list[str]:
    """The installed upstream (vllm-ascend for the NPU runners, vLLM for the GPU ones) must
    hold the very file the runners were generated from."""
    info = LAYOUTS[lock.layout]
    found = importlib.util.find_spec(info.member.split("/", 1)[0])
    locations = list(found.submodule_search_locations or []) if found else []
    if not locations:
        return [
            f"{info.dist} is not installed here; the runners were generated from {lock.upstream}"
        ]
    path = Path(locations[0]).parent / info.member
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        digest = ""
    if digest == lock.upstream_sha256:
        return []
    return [
        f"the installed {info.dist} ({_installed_version(info.dist)}, {path}) is not the one "
        f"the runners were generated from ({lock.upstream}): sync onto `installed` or install "
        "that"
    ]


def _installed_pins(lock: lockfile.Lock) -> list[str]:
    """A V2 tree relies on more than the runner file: the files and releases its lock pins."""
    if lock.layout is not Layout.V2:
        return []
    rows = [(s.label, s.sha256) for s in lock.sources if s.role == pins.ROLE]
    releases = [lock.upstream, *(s.label for s in lock.sources if s.role in _RELEASES)]
    return pins.differences(rows, releases)


#: Lock roles whose label names a release the tree's code runs against.
_RELEASES = ("source", "vllm-base")


def _installed_version(dist: str) -> str:
    from importlib import metadata

    try:
        return f"version {metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return "version unknown"


def _say_loudly(folder: Path, reasons: Sequence[str]) -> None:
    message = f"omni-port: WARNING: running generated runners that are NOT deployable ({folder}):"
    lines = [message, *(f"omni-port:   - {reason}" for reason in reasons)]
    sys.stderr.write("".join(line + "\n" for line in lines))
    warnings.warn(" ".join(lines), RuntimeWarning, stacklevel=3)


def layout_of(folder: Path) -> tuple[Layout, LayoutInfo]:
    """Which runners a generated tree holds, as its lock says (``Lock.layout``). A tree
    without a lock it can read is refused whatever it holds: then the first layout whose
    runner modules it holds (the NPU's when none) only names what the refusal is about."""
    lock = lockfile.read_or_none(folder)
    if lock is not None:
        return lock.layout, LAYOUTS[lock.layout]
    for layout, info in LAYOUTS.items():
        if any((folder / f"{module}.py").is_file() for module in info.runners):
            return layout, info
    return Layout.V1, LAYOUTS[Layout.V1]


def stop_using_generated_runners() -> None:
    """Remove the import hooks (modules already loaded stay loaded)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _OURS)]


def _rebind_workers(package: str, runners: Mapping[str, str]) -> None:
    """Point already-imported workers at the generated classes: a ``model_runner_cls``
    attribute, or a module global naming a runner class (``from ... import
    NPUARModelRunner`` in a worker module)."""
    for name, module in list(sys.modules.items()):
        if not name.startswith(package + ".") or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            current = getattr(value, "model_runner_cls", None)
            if isinstance(value, type) and isinstance(current, type):
                replacement = _generated_class(package, runners, current.__name__)
                if replacement is not None:
                    value.model_runner_cls = replacement  # type: ignore[attr-defined]
            if isinstance(value, type) and attribute in runners.values():
                replacement = _generated_class(package, runners, attribute)
                if replacement is not None and replacement is not value:
                    setattr(module, attribute, replacement)


def _generated_class(package: str, runners: Mapping[str, str], class_name: str) -> type | None:
    for module, provided in runners.items():
        if provided == class_name:
            loaded = importlib.import_module(f"{package}.{module}")
            found = getattr(loaded, class_name, None)
            return found if isinstance(found, type) else None
    return None


# --- V1 and V2 side by side -----------------------------------------------------------------

#: The package suffixes of vLLM-Omni's V1 NPU runners and of its V2 runners.
V1_SUFFIX = ".platforms.npu.worker"
V2_SUFFIX = ".worker_v2"
#: The V2 runner each NPU worker builds when ``use_v2_model_runner`` is set, by the class
#: of its V1 runner (``model_runner_cls``).
V2_FOR_V1: Mapping[str, tuple[str, str]] = {
    "OmniNPUModelRunner": ("omni_model_runner", "OmniGPUModelRunner"),
    "NPUARModelRunner": ("omni_ar_model_runner", "OmniARModelRunner"),
    "NPUGenerationModelRunner": ("omni_generation_model_runner", "OmniGenerationModelRunner"),
}
#: The V2 module of the generation (Code2Wav) stage, whose worker warms up differently.
GENERATION_V2 = "omni_generation_model_runner"


@dataclass(frozen=True, slots=True)
class Served:
    """One generated tree the switch serves, and the package it stands in for."""

    folder: Path
    package: str
    runners: Mapping[str, str]
    layout: Layout


def served_trees(folder: Path, package: str) -> list[Served]:
    """The tree in ``folder`` (served as ``package``) and a V2 tree in a subdirectory of
    it, served as the V2 package of the same vLLM-Omni (``<root>.worker_v2``)."""
    layout, info = layout_of(folder)
    trees = [Served(folder, package, info.runners, layout)]
    if layout is Layout.V1:
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else ():
            lock = lockfile.read_or_none(sub)
            if lock is not None and lock.layout is Layout.V2:
                trees.append(Served(sub, _root(package) + V2_SUFFIX, V2_RUNNERS, Layout.V2))
                break
    return trees


def _root(package: str) -> str:
    """``vllm_omni`` of ``vllm_omni.platforms.npu.worker`` (or of ``vllm_omni.worker_v2``)."""
    for suffix in (V1_SUFFIX, V2_SUFFIX):
        if package.endswith(suffix):
            return package.removesuffix(suffix)
    return PACKAGE.removesuffix(V1_SUFFIX)


def served_modules(tree: Served) -> dict[str, Path]:
    """Full module name -> generated file, for every module a tree serves: its runner
    modules, and for a V2 tree every module its lock lists (``model_states/omni_model_state.py``
    is served as ``<package>.model_states.omni_model_state``)."""
    found = {
        f"{tree.package}.{module}": tree.folder / f"{module}.py"
        for module in tree.runners
        if (tree.folder / f"{module}.py").is_file()
    }
    lock = lockfile.read_or_none(tree.folder) if tree.layout is Layout.V2 else None
    for name in sorted(lock.outputs) if lock is not None else ():
        if name.endswith(".py") and (tree.folder / name).is_file():
            dotted = name.removesuffix(".py").replace("/", ".")
            found.setdefault(f"{tree.package}.{dotted}", tree.folder / name)
    return found


def _tree_reasons(folder: Path, trees: Sequence[Served]) -> list[str]:
    """Why any tree served is not deployable; a subtree's reasons name it."""
    reasons: list[str] = []
    for tree in trees:
        prefix = "" if tree.folder == folder else f"{tree.folder.name}/: "
        reasons.extend(prefix + reason for reason in unresolved(tree.folder))
    return reasons


def uses_v2(vllm_config: object) -> bool:
    """Whether a worker runs Model Runner V2, the way vLLM-Omni decides it per stage
    (``omni_port.v2.stage``); raises ``stage.StageConflict`` when vllm-ascend's
    VLLM_USE_V2_MODEL_RUNNER says otherwise."""
    return stage.selects_v2(vllm_config)


def runner_selector(
    v1: type, v2_module: str, v2_class: str, required: frozenset[Condition] = frozenset()
) -> type:
    """A drop-in for a worker's ``model_runner_cls``: ``cls(vllm_config, device, ...)``
    builds the V2 runner ``v2_module.v2_class`` where the stage selects Model Runner V2
    (``uses_v2``; VLLM_USE_V2_MODEL_RUNNER is then set for vllm-ascend), the V1 runner
    ``v1`` otherwise. The V2 module is imported only then (it needs vllm-ascend). A stage
    whose configuration breaks a condition in ``required`` (``omni_port.v2.conditions``) is
    refused then, as unsupported configurations are.

    The selector is a subclass of ``v1``, so every ``issubclass`` check vLLM-Omni makes of a
    worker's runner class still holds (its engine arguments require the Omni connector
    mixin of every stage's runner before a worker starts). What it builds is never an
    instance of the selector itself: Python then runs no ``__init__`` a second time."""

    def __new__(cls: type, vllm_config: object, *args: object, **kwargs: object) -> object:
        v2 = uses_v2(vllm_config)
        if v2:
            stage.refuse_unsupported(vllm_config, required)
        stage.agree(v2)
        chosen = getattr(importlib.import_module(v2_module), v2_class) if v2 else v1
        return chosen(vllm_config, *args, **kwargs)

    namespace = {
        "__new__": __new__,
        "__doc__": f"{v1.__name__}, or {v2_class} when use_v2_model_runner is set (omni-port).",
        "v1_runner": v1,
        "v2_runner": f"{v2_module}.{v2_class}",
        "__module__": __name__,
    }
    name = f"{v1.__name__}OrV2"
    return new_class(name, (v1,), exec_body=lambda body: body.update(namespace))


def _select_v2_runners(trees: Sequence[Served]) -> None:
    """With a V2 tree served, the NPU workers (imported now or later) get selectors."""
    v2 = next((t for t in trees if t.layout is Layout.V2), None)
    if v2 is None:
        return
    workers = _root(v2.package) + V1_SUFFIX
    lock = lockfile.read_or_none(v2.folder)
    required = conditions.in_rows(lock.placements) if lock is not None else frozenset()
    hook = WorkerHook(workers, v2.package, required)
    sys.meta_path.insert(0, hook)
    for name, module in list(sys.modules.items()):
        if name.startswith(workers + ".") and module is not None:
            hook.select(module)


class WorkerHook(importlib.abc.MetaPathFinder):
    """Installs ``runner_selector`` on the NPU worker classes of every worker module
    imported while the switch is on (they keep their V1 runner in ``model_runner_cls``)."""

    def __init__(
        self, workers: str, v2_package: str, required: frozenset[Condition] = frozenset()
    ) -> None:
        self.workers = workers
        self.v2_package = v2_package
        #: The conditions the V2 tree's reviewed decisions require of a stage.
        self.required = required

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.workers + ".") or fullname.rsplit(".", 1)[1] in RUNNERS:
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _OURS) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _SelectingLoader(spec.loader, self)
                return spec
        return None

    def select(self, module: ModuleType) -> None:
        """Each worker class of ``module`` builds the runner its stage selects, says which
        (``use_v2_model_runner``), and a generation worker warms a V2 runner up as
        vLLM-Omni's GPU generation worker does (``omni_port.v2.stage``)."""
        for value in list(vars(module).values()):
            current = getattr(value, "model_runner_cls", None)
            if not isinstance(value, type) or not isinstance(current, type):
                continue
            v1 = getattr(current, "v1_runner", current)  # switched before: re-select
            target = V2_FOR_V1.get(v1.__name__)
            if target is None:
                continue
            module_name = f"{self.v2_package}.{target[0]}"
            selector = runner_selector(v1, module_name, target[1], self.required)
            value.model_runner_cls = selector  # type: ignore[attr-defined]
            stage.wrap_once(value, "init_device", stage.with_v2_flag)
            if target[0] == GENERATION_V2:
                stage.wrap_once(value, "compile_or_warm_up_model", stage.generation_warm_up)


class _SelectingLoader(importlib.abc.Loader):
    """A worker module's own loader, then the selectors on its worker classes."""

    def __init__(self, loader: importlib.abc.Loader, hook: WorkerHook) -> None:
        self.loader = loader
        self.hook = hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.hook.select(module)

    def __getattr__(self, name: str) -> object:
        # get_source, is_package, ...: what the module's own loader answers.
        return getattr(self.loader, name)


#: The import hooks the switch installs (removed together).
_OURS = (GeneratedRunnerFinder, WorkerHook)
