"""The runtime switch on vLLM-Omni's GPU runners (issue 46), on package trees written here
(no vLLM anywhere): a tree whose lock says ``layout: gpu`` stands in for vLLM-Omni's
``worker`` package, is refused as an NPU tree is (the installed upstream it is checked
against being vLLM), and is served beside an NPU tree, whose runners subclass the GPU one."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.model import Layout
from omni_port.patches import lockfile
from tests.test_runtime import ROOT, SPAWN, UPSTREAM, _deployable, _verified, _write
from tests.test_runtime import environment as environment  # the autouse fixture: env restored

#: vLLM-Omni's packages in the fake site: the GPU runners and workers, and the NPU ones.
GPU = "fakegpu.worker"
NPU = "fakegpu.platforms.npu.worker"
#: vLLM's runner module the fake GPU runners were "generated from" (installed in the site).
VLLM = b"class GPUModelRunner:\n    pass\n"
VLLM_LOCKED = ("vllm==9.9.9", VLLM)
#: Where the switch finds vLLM's and vllm-ascend's runner files in the site.
VLLM_FILE = "vllm/v1/worker/gpu_model_runner.py"
ASCEND_FILE = "vllm_ascend/worker/model_runner_v1.py"

GPU_BASE = """\
class OmniGPUModelRunner:
    origin = "{origin}"
"""
GPU_AR = f"""\
from {GPU}.gpu_model_runner import OmniGPUModelRunner

class GPUARModelRunner(OmniGPUModelRunner):
    origin = "{{origin}}"
"""
# vLLM-Omni's NPU runners subclass its GPU runner (OmniNPUModelRunner(OmniGPUModelRunner, ...)).
NPU_BASE = f"""\
from {GPU}.gpu_model_runner import OmniGPUModelRunner

class OmniNPUModelRunner(OmniGPUModelRunner):
    origin = "{{origin}}"
"""
NPU_AR = f"""\
from {NPU}.npu_model_runner import OmniNPUModelRunner

class NPUARModelRunner(OmniNPUModelRunner):
    origin = "{{origin}}"
"""
WORKER = """\
from {package}.{module} import {runner}

class {worker}:
    model_runner_cls = {runner}
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """vLLM-Omni's hand-maintained GPU and NPU runners and workers, vLLM's and vllm-ascend's
    runner files (found, never imported), and the generated trees: ``generated/`` (NPU)
    and ``generated/gpu`` (GPU), each locked and verified."""
    root = tmp_path / "site"
    for package in ("fakegpu", "fakegpu/worker", "fakegpu/platforms", "fakegpu/platforms/npu"):
        _write(root / package / "__init__.py", "")
    _write(root / NPU.replace(".", "/") / "__init__.py", "")
    gpu, npu = root / GPU.replace(".", "/"), root / NPU.replace(".", "/")
    _write(gpu / "gpu_model_runner.py", GPU_BASE.format(origin="hand"))
    _write(gpu / "gpu_ar_model_runner.py", GPU_AR.format(origin="hand"))
    _write(npu / "npu_model_runner.py", NPU_BASE.format(origin="hand"))
    _write(npu / "npu_ar_model_runner.py", NPU_AR.format(origin="hand"))
    ar = {"module": "gpu_ar_model_runner", "runner": "GPUARModelRunner", "worker": "GPUARWorker"}
    _write(gpu / "gpu_ar_worker.py", WORKER.format(package=GPU, **ar))
    ar = {"module": "npu_ar_model_runner", "runner": "NPUARModelRunner", "worker": "NPUARWorker"}
    _write(npu / "npu_ar_worker.py", WORKER.format(package=NPU, **ar))
    for member, data in ((VLLM_FILE, VLLM), (ASCEND_FILE, UPSTREAM)):
        (root / member).parent.mkdir(parents=True)
        (root / member).write_bytes(data)
        top = root / member.split("/", 1)[0]
        (top / "__init__.py").write_text("raise ImportError('never imported')\n")
    generated = tmp_path / "generated"
    _write(generated / "npu_model_runner.py", NPU_BASE.format(origin="generated"))
    _write(generated / "npu_ar_model_runner.py", NPU_AR.format(origin="generated"))
    _deployable(generated)
    _write(generated / "gpu" / "gpu_model_runner.py", GPU_BASE.format(origin="generated"))
    _write(generated / "gpu" / "gpu_ar_model_runner.py", GPU_AR.format(origin="generated"))
    _deployable(generated / "gpu", layout=Layout.GPU, upstream=VLLM_LOCKED)
    monkeypatch.syspath_prepend(str(root))
    yield generated
    runtime.stop_using_generated_runners()
    for name in [n for n in sys.modules if n == "fakegpu" or n.startswith("fakegpu.")]:
        del sys.modules[name]


def _worker(package: str, module: str, worker: str) -> type:
    found = getattr(importlib.import_module(f"{package}.{module}"), worker)
    assert isinstance(found, type)
    return found


def _gpu_runner() -> type:
    runner = _worker(GPU, "gpu_ar_worker", "GPUARWorker").model_runner_cls
    assert isinstance(runner, type)
    return runner


def _npu_runner() -> type:
    runner = _worker(NPU, "npu_ar_worker", "NPUARWorker").model_runner_cls
    assert isinstance(runner, type)
    return runner


def _origins(runner: type) -> list[tuple[str, str]]:
    """Each class of the runner's MRO that says where it comes from, and where."""
    return [(c.__name__, c.__dict__["origin"]) for c in runner.__mro__ if "origin" in c.__dict__]


@pytest.mark.parametrize("imported_first", [False, True])
def test_a_gpu_tree_stands_in_for_vllm_omnis_worker_package(
    site: Path, imported_first: bool
) -> None:
    if imported_first:
        assert _gpu_runner().origin == "hand"
    redirected = runtime.use_generated_runners(site / "gpu", package=GPU)
    assert redirected == [f"{GPU}.gpu_ar_model_runner", f"{GPU}.gpu_model_runner"]
    assert _origins(_gpu_runner()) == [
        ("GPUARModelRunner", "generated"),
        ("OmniGPUModelRunner", "generated"),
    ], "the generated modules import each other"


def test_the_lock_says_the_tree_holds_the_gpu_runners(site: Path) -> None:
    """Without a package the lock's layout names vLLM-Omni's own GPU package; the same
    files under an NPU lock are no GPU tree."""
    assert runtime.layout_of(site / "gpu") == (Layout.GPU, runtime.LAYOUTS[Layout.GPU])
    redirected = runtime.use_generated_runners(site / "gpu")
    assert redirected == [
        "vllm_omni.worker.gpu_ar_model_runner",
        "vllm_omni.worker.gpu_model_runner",
    ]
    _deployable(site / "gpu", upstream=VLLM_LOCKED)
    with pytest.raises(FileNotFoundError, match=r"\(layout v1: npu_model_runner\.py, "):
        runtime.use_generated_runners(site / "gpu")


# --- what the switch refuses of a GPU tree --------------------------------------------------


def _conflict(gpu: Path) -> None:
    blocks = ("gpu_ar_model_runner.GPUARModelRunner.m.edit-01",)
    _deployable(gpu, conflicts=blocks, layout=Layout.GPU, upstream=VLLM_LOCKED)


def _unverified(gpu: Path) -> None:
    (gpu / lockfile.VERDICT_NAME).unlink()


def _failed_verify(gpu: Path) -> None:
    _verified(gpu, problems=("generated/gpu/gpu_model_runner.py:3:1: OP502 undefined name",))


def _edited(gpu: Path) -> None:
    with (gpu / "gpu_model_runner.py").open("a") as runner:
        runner.write("# edited\n")


def _unlisted(gpu: Path) -> None:
    (gpu / "gpu_generation_model_runner.py").write_text("class GPUGenerationModelRunner: ...\n")


def _unlocked(gpu: Path) -> None:
    (gpu / lockfile.LOCK_NAME).unlink()


def _other_vllm(gpu: Path) -> None:
    installed = gpu.parent.parent / "site" / VLLM_FILE
    installed.write_bytes(VLLM + b"# another release\n")


def _no_vllm(gpu: Path) -> None:
    shutil.rmtree(gpu.parent.parent / "site" / "vllm")
    importlib.invalidate_caches()


REFUSALS = [
    pytest.param(_conflict, "1 conflicts left commented out (gpu_ar_model_runner.GPUAR",
                 id="conflicts"),
    pytest.param(_unverified, "not verified since the last sync", id="unverified"),
    pytest.param(_failed_verify, "1 verify problems (the first: generated/gpu/", id="verify"),
    pytest.param(_edited, "gpu_model_runner.py was edited since sync wrote it", id="edited"),
    pytest.param(_unlisted, "gpu_generation_model_runner.py is not in omni-port.lock",
                 id="unlisted"),
    pytest.param(_unlocked, "no omni-port.lock: nothing was generated here", id="no-lock"),
    pytest.param(_other_vllm, "is not the one the runners were generated from (vllm==9.9.9)",
                 id="other-vllm"),
    pytest.param(_no_vllm, "vllm is not installed here; the runners were generated from "
                 "vllm==9.9.9", id="no-vllm"),
]  # fmt: skip


@pytest.mark.parametrize(("spoil", "reason"), REFUSALS)
def test_a_gpu_tree_that_is_not_deployable_is_refused(
    site: Path, spoil: Callable[[Path], None], reason: str
) -> None:
    spoil(site / "gpu")
    with pytest.raises(runtime.NotDeployable) as refused:
        runtime.use_generated_runners(site / "gpu", package=GPU)
    assert reason in str(refused.value)
    assert not any(isinstance(f, runtime.GeneratedRunnerFinder) for f in sys.meta_path)
    assert runtime.ENV not in os.environ, "a refused choice is not exported"
    assert "vllm" not in sys.modules, "found, never imported"


def test_the_installed_vllm_is_checked_not_vllm_ascend(site: Path) -> None:
    other = site.parent / "site" / VLLM_FILE
    assert runtime.unresolved(site / "gpu") == []
    shutil.rmtree(site.parent / "site" / "vllm_ascend")
    importlib.invalidate_caches()
    assert runtime.unresolved(site / "gpu") == [], "a GPU tree needs no vllm-ascend"
    other.write_bytes(VLLM + b"# another release\n")
    [reason] = runtime.unresolved(site / "gpu")
    assert reason.startswith(f"the installed vllm (version unknown, {other})")


# --- NPU and GPU trees in one process ---------------------------------------------------------


def _switch_npu(site: Path) -> None:
    runtime.use_generated_runners(site, package=NPU)


def _switch_gpu(site: Path) -> None:
    runtime.use_generated_runners(site / "gpu", package=GPU)


def _import_npu(site: Path) -> None:
    assert _npu_runner().origin == "generated"


ORDERS = [
    pytest.param((_switch_npu, _switch_gpu), id="npu-then-gpu"),
    pytest.param((_switch_gpu, _switch_npu), id="gpu-then-npu"),
    pytest.param((_switch_npu, _import_npu, _switch_gpu), id="npu-imported-then-gpu"),
]


@pytest.mark.parametrize("steps", ORDERS)
def test_npu_and_gpu_trees_are_served_together(
    site: Path, steps: tuple[Callable[[Path], None], ...]
) -> None:
    """The generated NPU runners subclass the generated GPU runner, whichever tree was
    switched first, and even when they were imported before the GPU tree was switched."""
    for step in steps:
        step(site)
    assert _origins(_npu_runner()) == [
        ("NPUARModelRunner", "generated"),
        ("OmniNPUModelRunner", "generated"),
        ("OmniGPUModelRunner", "generated"),
    ]
    assert _origins(_gpu_runner())[0] == ("GPUARModelRunner", "generated")
    switched = [str(site), str(site / "gpu")]
    if steps[0] is _switch_gpu:
        switched.reverse()
    assert os.environ[runtime.ENV].split(os.pathsep) == [str(p) for p in switched]
    assert os.environ[runtime.PACKAGE_ENV].split(os.pathsep) == [
        NPU if p == str(site) else GPU for p in switched
    ]


def test_a_tree_of_the_same_package_replaces_the_one_switched_before(site: Path) -> None:
    again = site.parent / "again"
    shutil.copytree(site / "gpu", again)
    _switch_npu(site)
    _switch_gpu(site)
    runtime.use_generated_runners(again, package=GPU)
    [finder] = [f for f in sys.meta_path if isinstance(f, runtime.GeneratedRunnerFinder)]
    assert finder.files[f"{GPU}.gpu_model_runner"] == again / "gpu_model_runner.py"
    assert finder.files[f"{NPU}.npu_model_runner"] == site / "npu_model_runner.py"
    assert os.environ[runtime.ENV].split(os.pathsep) == [str(site), str(again)]


def test_the_gpu_tree_is_served_only_when_switched_and_refused_alone(site: Path) -> None:
    """Switching the NPU tree leaves the GPU tree beside it (``generated/gpu``) unserved; a
    GPU tree refused then leaves the NPU tree served as it was."""
    redirected = runtime.use_generated_runners(site, package=NPU)
    assert not [name for name in redirected if name.startswith(GPU + ".")]
    _edited(site / "gpu")
    with pytest.raises(runtime.NotDeployable):
        _switch_gpu(site)
    assert _origins(_npu_runner()) == [
        ("NPUARModelRunner", "generated"),
        ("OmniNPUModelRunner", "generated"),
        ("OmniGPUModelRunner", "hand"),
    ]
    assert os.environ[runtime.ENV] == str(site)


# --- spawned workers ------------------------------------------------------------------------

LAUNCHER = """\
import multiprocessing

from omni_port import runtime


def worker(queue):
    # What vLLM does first in every process it starts: load its general plugins.
    runtime.vllm_plugin()
    module = __import__("{npu}.npu_ar_worker", fromlist=["NPUARWorker"])
    runner = module.NPUARWorker.model_runner_cls
    queue.put([c.__dict__["origin"] for c in runner.__mro__ if "origin" in c.__dict__])


if __name__ == "__main__":
    runtime.use_generated_runners({npu_tree!r}, package="{npu}")
    runtime.use_generated_runners({gpu_tree!r}, package="{gpu}")
"""
LAUNCHER += SPAWN


def test_both_trees_reach_spawned_workers_through_the_environment(
    site: Path, tmp_path: Path
) -> None:
    """The worker, started by ``spawn``, switches both trees from the environment alone."""
    script = tmp_path / "launcher.py"
    values = {"npu": NPU, "gpu": GPU, "npu_tree": str(site), "gpu_tree": str(site / "gpu")}
    script.write_text(LAUNCHER.format(**values))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["generated", "generated", "generated"]
