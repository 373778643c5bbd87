"""The one-call switch that makes vLLM-Omni's workers run the generated runners.

vLLM-Omni's NPU workers import their runners by module name
(``vllm_omni.platforms.npu.worker.npu_ar_model_runner``) and keep the class in
``model_runner_cls``. The switch installs an import hook that serves those module names
from the generated files instead, so the generated modules also import each other under
the names they were generated with; workers imported earlier get their
``model_runner_cls`` rebound. Nothing here imports vllm, vllm-ascend or torch.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

#: Package vLLM-Omni keeps its NPU runners in.
PACKAGE = "vllm_omni.platforms.npu.worker"
#: Generated runner modules and the class each one provides.
RUNNERS: Mapping[str, str] = {
    "npu_model_runner": "OmniNPUModelRunner",
    "npu_ar_model_runner": "NPUARModelRunner",
    "npu_generation_model_runner": "NPUGenerationModelRunner",
}
#: Package vLLM-Omni keeps its Model Runner V2 runners in (GPU ones; the generated tree
#: composes them with vllm-ascend's V2 NPU runner under the same names).
V2_PACKAGE = "vllm_omni.worker_v2"
#: Generated V2 runner modules and the class each one provides.
V2_RUNNERS: Mapping[str, str] = {
    "omni_model_runner": "OmniGPUModelRunner",
    "omni_ar_model_runner": "OmniARModelRunner",
    "omni_generation_model_runner": "OmniGenerationModelRunner",
}
#: The layouts of a generated tree: the package its modules stand in for, and its runners.
LAYOUTS: tuple[tuple[str, Mapping[str, str]], ...] = ((PACKAGE, RUNNERS), (V2_PACKAGE, V2_RUNNERS))
#: Environment variable naming the generated directory when no path is given.
ENV = "OMNI_PORT_GENERATED"


class GeneratedRunnerFinder(importlib.abc.MetaPathFinder):
    """Serves chosen module names from files in the generated directory."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        #: Full module name -> generated file.
        self.files = dict(files)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.SourceFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def use_generated_runners(
    directory: str | os.PathLike[str] | None = None, package: str | None = None
) -> list[str]:
    """Make the runner modules of a generated tree load from ``directory``; returns the
    module names redirected.

    A V1 tree (``npu_*_model_runner.py``) stands in for ``vllm_omni.platforms.npu.worker``,
    a V2 tree (``omni_*_model_runner.py``) for ``vllm_omni.worker_v2``; ``package``
    overrides that. Call it before vLLM-Omni's workers are imported (for example first
    thing in the launcher). Workers imported earlier have ``model_runner_cls`` rebound to
    the generated class. Raises FileNotFoundError when the directory holds no generated
    runner.
    """
    folder = _folder(directory)
    default, runners = _layout(folder)
    package = package or default
    files = {
        f"{package}.{module}": folder / f"{module}.py"
        for module in runners
        if (folder / f"{module}.py").is_file()
    }
    if not files:
        raise FileNotFoundError(f"no generated runner modules in {folder} (run `omni-port sync`)")
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GeneratedRunnerFinder)]
    sys.meta_path.insert(0, GeneratedRunnerFinder(files))
    for name in files:
        sys.modules.pop(name, None)
    _rebind_workers(package, runners)
    return sorted(files)


def _layout(folder: Path) -> tuple[str, Mapping[str, str]]:
    """The layout whose runner modules the folder holds (V1 when it holds none)."""
    for package, runners in LAYOUTS:
        if any((folder / f"{module}.py").is_file() for module in runners):
            return package, runners
    return LAYOUTS[0]


def stop_using_generated_runners() -> None:
    """Remove the import hook (modules already loaded stay loaded)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GeneratedRunnerFinder)]


def _folder(directory: str | os.PathLike[str] | None) -> Path:
    if directory is None:
        configured = os.environ.get(ENV)
        if not configured:
            raise FileNotFoundError(f"pass the generated directory or set ${ENV}")
        directory = configured
    return Path(directory).resolve()


def _rebind_workers(package: str, runners: Mapping[str, str]) -> None:
    """Point already-imported workers' ``model_runner_cls`` at the generated classes."""
    for name, module in list(sys.modules.items()):
        if not name.startswith(package + ".") or module is None:
            continue
        for value in list(vars(module).values()):
            current = getattr(value, "model_runner_cls", None)
            if isinstance(value, type) and isinstance(current, type):
                replacement = _generated_class(package, runners, current.__name__)
                if replacement is not None:
                    value.model_runner_cls = replacement  # type: ignore[attr-defined]


def _generated_class(package: str, runners: Mapping[str, str], class_name: str) -> type | None:
    for module, provided in runners.items():
        if provided == class_name:
            loaded = importlib.import_module(f"{package}.{module}")
            found = getattr(loaded, class_name, None)
            return found if isinstance(found, type) else None
    return None
