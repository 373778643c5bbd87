"""The runtime switch with a V2 tree, on small packages written here that mimic vLLM-Omni's
stage config and NPU workers, vllm-ascend's worker and vLLM's worker base (no real package
is imported; none is installed here).

vLLM-Omni selects Model Runner V2 per stage: a deploy config's ``model_runner: v2`` becomes
``model_config.use_v2_model_runner``. vllm-ascend runs V2 only with
``VLLM_USE_V2_MODEL_RUNNER=1``. The switched workers must build the generated V2 runner for
such a stage, make the two agree, and warm a V2 generation runner up with ``profile_run``
alone; and the switch must refuse a tree whose pinned files or releases are not installed.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from omni_port import runtime
from omni_port.model import Layout, Placement, RegionKind, Rule, Status
from omni_port.patches import lockfile
from omni_port.sources.upstream import package_texts, parse_spec
from omni_port.v2 import pins, stage

ROOT = "fakestage"
WORKERS = f"{ROOT}.platforms.npu.worker"
V2 = f"{ROOT}.worker_v2"
UPSTREAM = b"class NPUModelRunner:\n    pass\n"
#: Files a V2 tree pins, one per distribution, as the fake site installs them.
PINNED = {
    "vllm_ascend/patch/worker/patch_v2/patch_model_state.py": "INSTALLED = 'state'\n",
    "vllm_omni/worker_v2/model_states/__init__.py": "FACTORY = 'omni'\n",
    "vllm/v1/worker/gpu/model_states/default.py": "STATE = 'default'\n",
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _installed(site: Path, dist: str, version: str) -> None:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    _write(info / "METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


#: vLLM-Omni's stage config, in little: the deploy-level runner, a stage's own over it.
STAGE_CONFIG = """\
from fakestage.config.model import OmniModelConfig


class VllmConfig:
    def __init__(self, model_config):
        self.model_config = model_config

    @property
    def use_v2_model_runner(self):
        # vllm-ascend's patch: Model Runner V2 only with the variable set.
        import os

        return os.environ.get("VLLM_USE_V2_MODEL_RUNNER") == "1"


def stage_vllm_config(deploy, stage_id):
    stage = next((s for s in deploy.get("stages", []) if s["stage_id"] == stage_id), {})
    runner = stage.get("model_runner") or deploy.get("model_runner", "v1")
    return VllmConfig(OmniModelConfig(stage_id, use_v2_model_runner=runner == "v2"))
"""
MODEL_CONFIG = """\
class OmniModelConfig:
    def __init__(self, stage_id, use_v2_model_runner=False):
        self.stage_id = stage_id
        self.use_v2_model_runner = use_v2_model_runner
"""
#: vllm-ascend's NPU worker, in little: its flag from the variable, its warm-up.
WORKER_BASE = """\
from vllm.v1.worker.worker_base import CompilationTimes


class NPUWorker:
    def __init__(self, vllm_config, device):
        self.vllm_config = vllm_config
        self.device = device
        self.use_v2_model_runner = vllm_config.use_v2_model_runner

    def compile_or_warm_up_model(self):
        self.steps = []
        for size in (8, 4):
            self.model_runner._dummy_run(size)
        self.steps.append("kernel_warmup")
        graph_memory = self.model_runner.capture_model()
        self.steps.append(f"graph memory {graph_memory}")
        self.steps += ["atb_warmup", "bind_cpus", "set_random_seed"]
        return CompilationTimes(language_model=1.0, encoder=1.0)
"""
WORKER = """\
from fakestage.platforms.npu.worker.base import NPUWorker
from fakestage.platforms.npu.worker.{module} import {runner}


class {worker}(NPUWorker):
    model_runner_cls = {runner}

    def init_device(self):
        self.model_runner = self.model_runner_cls(self.vllm_config, self.device)
"""
RUNNER = """\
from fakestage.worker.omni_connector_model_runner_mixin import OmniConnectorModelRunnerMixin


class {runner}(OmniConnectorModelRunnerMixin):
    origin = "{origin}"

    def __init__(self, vllm_config, device):
        self.calls = []

    def _dummy_run(self, size):
        self.calls.append(("_dummy_run", size))

    def capture_model(self):
        self.calls.append(("capture_model",))
        return 1024

    def profile_run(self):
        self.calls.append(("profile_run",))
"""
#: vLLM-Omni's connector mixin, which every stage's runner class must derive from.
MIXIN = """\
class OmniConnectorModelRunnerMixin:
    pass
"""
#: A double of vLLM-Omni's check of a worker before it starts (its engine arguments run it
#: once the general plugins, the switch among them, are loaded); the real one is read from
#: the pinned release in ``test_vllm_omnis_own_worker_validation_passes_the_switched_workers``.
VALIDATION = """\
def validate_worker_omni_connector(worker_cls, required):
    from fakestage.worker.omni_connector_model_runner_mixin import (
        OmniConnectorModelRunnerMixin,
    )

    runner = getattr(worker_cls, "model_runner_cls", None)
    if required and not (
        isinstance(runner, type) and issubclass(runner, OmniConnectorModelRunnerMixin)
    ):
        raise ValueError(f"Worker {worker_cls.__name__!r} does not provide an Omni connector")
"""
WORKER_BASE_VLLM = """\
from typing import NamedTuple


class CompilationTimes(NamedTuple):
    language_model: float
    encoder: float
"""
STAGES = (
    ("npu_ar_worker", "NPUARWorker", "npu_ar_model_runner", "NPUARModelRunner"),
    ("npu_generation_worker", "NPUGenerationWorker", "npu_generation_model_runner",
     "NPUGenerationModelRunner"),
)  # fmt: skip
V2_RUNNERS = {
    "npu_ar_model_runner": ("omni_ar_model_runner", "OmniARModelRunner"),
    "npu_generation_model_runner": ("omni_generation_model_runner", "OmniGenerationModelRunner"),
}


def _deployable(
    folder: Path,
    layout: Layout,
    sources: tuple[lockfile.Source, ...] = (),
    placements: tuple[Placement, ...] = (),
) -> None:
    outputs = {
        p.relative_to(folder).as_posix(): _sha(p.read_bytes()) for p in sorted(folder.rglob("*.py"))
    }
    lock = lockfile.Lock(
        "omni-port test",
        "vllm-ascend==9.9.9",
        _sha(UPSTREAM),
        "0" * 64,
        outputs,
        "sync",
        lockfile.rows(placements),
        layout=layout,
        sources=sources,
    )
    (folder / lockfile.LOCK_NAME).write_text(lockfile.render(lock))
    digest = _sha((folder / lockfile.LOCK_NAME).read_bytes())
    (folder / lockfile.VERDICT_NAME).write_text(
        lockfile.render_verdict(lockfile.Verdict(digest, ()))
    )


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (runtime.ENV, runtime.OVERRIDE_ENV, runtime.PACKAGE_ENV, stage.ENV):
        monkeypatch.delenv(name, raising=False)


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for package in (
        ROOT, f"{ROOT}/config", f"{ROOT}/platforms", f"{ROOT}/platforms/npu", f"{ROOT}/worker",
        WORKERS.replace(".", "/"), V2.replace(".", "/"), f"{V2.replace('.', '/')}/model_states",
        "vllm", "vllm/v1", "vllm/v1/worker",
    ):  # fmt: skip
        _write(site / package / "__init__.py", "")
    _write(site / ROOT / "config" / "stage_config.py", STAGE_CONFIG)
    _write(site / ROOT / "config" / "model.py", MODEL_CONFIG)
    _write(site / WORKERS.replace(".", "/") / "base.py", WORKER_BASE)
    _write(site / "vllm" / "v1" / "worker" / "worker_base.py", WORKER_BASE_VLLM)
    _write(site / ROOT / "worker" / "omni_connector_model_runner_mixin.py", MIXIN)
    _write(site / ROOT / "worker" / "omni_connector_validation.py", VALIDATION)
    for worker_module, worker, module, runner in STAGES:
        folder = site / WORKERS.replace(".", "/")
        _write(folder / f"{module}.py", RUNNER.format(runner=runner, origin="hand"))
        text = WORKER.format(module=module, runner=runner, worker=worker)
        _write(folder / f"{worker_module}.py", text)
    for upstream in (runtime.LAYOUTS[Layout.V1].member, runtime.LAYOUTS[Layout.V2].member):
        (site / upstream).parent.mkdir(parents=True, exist_ok=True)
        (site / upstream).write_bytes(UPSTREAM)
    for member, text in PINNED.items():
        _write(site / member, text)
    _installed(site, "vllm-ascend", "9.9.9")
    return site


@pytest.fixture
def deployed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed fake vLLM-Omni and its NPU workers, a generated V1 tree and, in
    ``generated/v2``, a generated V2 tree (with a module below the package, as the model
    state is), both deployable."""
    site = _site(tmp_path)
    generated = tmp_path / "generated"
    for _, _, module, runner in STAGES:
        _write(generated / f"{module}.py", RUNNER.format(runner=runner, origin="generated-v1"))
        v2_module, v2_runner = V2_RUNNERS[module]
        text = RUNNER.format(runner=v2_runner, origin="generated-v2")
        if v2_module == "omni_generation_model_runner":
            text += (
                "\n    def _dummy_run(self, size):\n"
                "        raise IndexError('one-element hidden states indexed by logits')\n"
            )
        _write(generated / "v2" / f"{v2_module}.py", text)
    _write(generated / "v2" / "model_states" / "omni_model_state.py", 'origin = "rebased"\n')
    _deployable(generated, Layout.V1)
    _deployable(generated / "v2", Layout.V2)
    monkeypatch.syspath_prepend(str(site))
    yield generated
    runtime.stop_using_generated_runners()
    for name in [n for n in sys.modules if n.split(".")[0] in (ROOT, "vllm", "vllm_ascend")]:
        del sys.modules[name]


def _config(deploy: dict[str, Any], stage_id: int = 0) -> Any:
    module = importlib.import_module(f"{ROOT}.config.stage_config")
    return module.stage_vllm_config(deploy, stage_id)


def _worker(name: str, vllm_config: Any) -> Any:
    module_name, worker = {
        "ar": ("npu_ar_worker", "NPUARWorker"),
        "generation": ("npu_generation_worker", "NPUGenerationWorker"),
    }[name]
    module = importlib.import_module(f"{WORKERS}.{module_name}")
    built = getattr(module, worker)(vllm_config, "npu:0")
    built.init_device()
    return built


# --- the stage selects the runner -----------------------------------------------------------


@pytest.mark.parametrize("imported_first", [False, True])
def test_a_deploy_config_selecting_v2_alone_builds_the_generated_v2_runner(
    deployed: Path, imported_first: bool
) -> None:
    if imported_first:
        importlib.import_module(f"{WORKERS}.npu_ar_worker")
    runtime.use_generated_runners(deployed, package=WORKERS)
    vllm_config = _config({"model_runner": "v2"})
    assert os.environ.get(stage.ENV) is None, "the deploy config alone"
    worker = _worker("ar", vllm_config)
    assert type(worker.model_runner).__name__ == "OmniARModelRunner"
    assert worker.model_runner.origin == "generated-v2"
    assert worker.use_v2_model_runner is True, "the worker says which runner it built"
    assert os.environ[stage.ENV] == "1" and vllm_config.use_v2_model_runner, (
        "vllm-ascend runs Model Runner V2 in this worker too"
    )


def test_a_deploy_config_without_v2_builds_the_v1_runner(deployed: Path) -> None:
    runtime.use_generated_runners(deployed, package=WORKERS)
    worker = _worker("ar", _config({"stages": [{"stage_id": 0}]}))
    assert worker.model_runner.origin == "generated-v1"
    assert worker.use_v2_model_runner is False
    assert os.environ.get(stage.ENV) is None


def test_each_stage_selects_its_own_runner(deployed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage's own ``model_runner`` wins over the deploy-level one (each stage is a
    process of its own: the variable is set per process)."""
    runtime.use_generated_runners(deployed, package=WORKERS)
    deploy = {"model_runner": "v1", "stages": [{"stage_id": 1, "model_runner": "v2"}]}
    assert _worker("ar", _config(deploy, 0)).model_runner.origin == "generated-v1"
    assert _worker("generation", _config(deploy, 1)).model_runner.origin == "generated-v2"


@pytest.mark.parametrize(
    ("deploy", "variable", "words"),
    [
        pytest.param({}, "1", "selects model_runner v1", id="variable-alone"),
        pytest.param({"model_runner": "v2"}, "0", "keeps vllm-ascend on Model Runner V1",
                     id="variable-says-v1"),
    ],
)  # fmt: skip
def test_a_stage_and_the_variable_that_disagree_are_refused(
    deployed: Path, monkeypatch: pytest.MonkeyPatch, deploy: dict[str, Any], variable: str,
    words: str,
) -> None:  # fmt: skip
    """The variable alone would put a V2 runner behind V1-mode schedulers (or a V1 runner
    under vllm-ascend's V2 forward context): refused, naming both and the stage."""
    runtime.use_generated_runners(deployed, package=WORKERS)
    monkeypatch.setenv(stage.ENV, variable)
    with pytest.raises(stage.StageConflict, match=words) as refused:
        _worker("ar", _config(deploy, 3))
    assert "stage 3" in str(refused.value) and f"{stage.ENV}={variable}" in str(refused.value)


def test_the_variable_and_the_stage_that_agree_build_v2(
    deployed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.use_generated_runners(deployed, package=WORKERS)
    monkeypatch.setenv(stage.ENV, "1")
    assert _worker("ar", _config({"model_runner": "v2"})).model_runner.origin == "generated-v2"


@pytest.mark.parametrize("runner", ["v1", "v2"])
def test_decode_context_parallelism_on_v2_is_refused_at_start_up(
    deployed: Path, runner: str
) -> None:
    """With DCP > 1, vllm-ascend's context-parallel attention reads
    ``input_batch.dcp_local_seq_lens``, which omni's V2 execute_model never sets: the V2
    runner is refused when a worker builds it, naming the stage; V1 runs as before."""
    runtime.use_generated_runners(deployed, package=WORKERS)
    vllm_config = _config({"model_runner": runner}, 2)
    vllm_config.parallel_config = types.SimpleNamespace(decode_context_parallel_size=2)
    if runner == "v1":
        assert _worker("ar", vllm_config).model_runner.origin == "generated-v1"
        return
    with pytest.raises(stage.Unsupported, match="decode_context_parallel_size=2") as refused:
        _worker("ar", vllm_config)
    assert "stage 2" in str(refused.value) and "model_runner v1" in str(refused.value)
    vllm_config.parallel_config.decode_context_parallel_size = 1
    assert _worker("ar", vllm_config).model_runner.origin == "generated-v2"


def test_v2_on_a_310p_is_refused_at_start_up(
    deployed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vllm-ascend's hardware profile of a 310P runs NPUWorker310, which builds
    NPUModelRunner310V2: the generated runners derive from the A2/A3 NPUModelRunner."""
    profiles = types.ModuleType(stage.HARDWARE_PROFILE)
    worker = "vllm_ascend._310p.worker_310p.NPUWorker310"
    profile = types.SimpleNamespace(default_worker_cls=worker)
    profiles.get_current_hardware_profile = lambda: profile  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, stage.HARDWARE_PROFILE, profiles)
    runtime.use_generated_runners(deployed, package=WORKERS)
    with pytest.raises(stage.Unsupported, match="NPUWorker310") as refused:
        _worker("ar", _config({"model_runner": "v2"}, 3))
    assert "stage 3" in str(refused.value) and "model_runner v1" in str(refused.value)
    assert _worker("ar", _config({}, 3)).model_runner.origin == "generated-v1"
    profile.default_worker_cls = stage.NPU_WORKER
    assert _worker("ar", _config({"model_runner": "v2"}, 3)).model_runner.origin == "generated-v2"


def test_a_stage_that_breaks_a_reviewed_decisions_condition_is_refused_at_start_up(
    deployed: Path,
) -> None:
    """The tree keeps omni's remove_request under an allow entry that requires sparse KV
    offload off (its lock row keeps the reason): a V2 stage that turns it on is refused."""
    reason = (
        "omni's frees its own buffers; AscendModelState's adds the release of sparse-KV-offload "
        "states [requires: no-sparse-kv-offload] (v2-allow.txt:26)"
    )
    kept = Placement(
        "model_states/omni_model_state.OmniModelState.remove_request",
        "model_states/omni_model_state.py",
        "OmniModelState",
        "remove_request",
        RegionKind.OVERRIDE,
        False,
        Status.CARRIED,
        1.0,
        reason=reason,
        decided_by=(Rule.ALLOWED,),
    )
    _deployable(deployed / "v2", Layout.V2, placements=(kept,))
    runtime.use_generated_runners(deployed, package=WORKERS)
    vllm_config = _config({"model_runner": "v2"}, 1)
    vllm_config.additional_config = {"sparse_kv_offload_config": {"enabled": True}}
    with pytest.raises(stage.Unsupported, match="no-sparse-kv-offload") as refused:
        _worker("ar", vllm_config)
    assert "stage 1" in str(refused.value) and "sparse_kv_offload_config" in str(refused.value)
    vllm_config.additional_config = {"sparse_kv_offload_config": {"enabled": False}}
    assert _worker("ar", vllm_config).model_runner.origin == "generated-v2"


# --- vLLM-Omni's checks of the switched workers ---------------------------------------------


def _validate(deployed: Path, module: str) -> None:
    """vLLM-Omni's worker validation (``module`` in the fake site) of both NPU workers, with
    the switch on: their ``model_runner_cls`` is then the selector."""
    runtime.use_generated_runners(deployed, package=WORKERS)
    check = importlib.import_module(f"{ROOT}.worker.{module}").validate_worker_omni_connector
    for worker_module, worker, _, runner in STAGES:
        cls = getattr(importlib.import_module(f"{WORKERS}.{worker_module}"), worker)
        assert cls.model_runner_cls.__name__ == f"{runner}OrV2", "the switch selects here"
        check(cls, True)


def test_the_switched_workers_pass_vllm_omnis_worker_validation(deployed: Path) -> None:
    """Every stage's runner class must derive from the connector mixin (Qwen3-Omni and
    Qwen3-TTS require it of each stage): the selector is a subclass of the V1 runner."""
    _validate(deployed, "omni_connector_validation")
    for stage_config in ({}, {"model_runner": "v2"}):
        assert _worker("ar", _config(stage_config)).model_runner.origin.startswith("generated")


def test_the_validation_double_refuses_a_runner_without_the_mixin(deployed: Path) -> None:
    check = importlib.import_module(f"{ROOT}.worker.omni_connector_validation")
    worker = type("Worker", (), {"model_runner_cls": type("Runner", (), {})})
    with pytest.raises(ValueError, match="does not provide an Omni connector"):
        check.validate_worker_omni_connector(worker, True)


@pytest.mark.real
def test_vllm_omnis_own_worker_validation_passes_the_switched_workers(
    deployed: Path, cache_dir: Path
) -> None:
    """The pinned release's own check, read as text and run on the fake site (its import of
    the mixin pointed at the fake package)."""
    texts = package_texts(parse_spec("vllm-omni==0.30.0", "vllm-omni"), "vllm_omni", cache_dir)
    assert texts, "vllm-omni==0.30.0 downloads"
    text = texts["vllm_omni/worker/omni_connector_validation.py"]
    mixin = "vllm_omni.worker.omni_connector_model_runner_mixin"
    assert f"from {mixin} import" in text and "issubclass(" in text, "the check the switch meets"
    site = deployed.parent / "site"
    real = text.replace(mixin, f"{ROOT}.worker.omni_connector_model_runner_mixin")
    _write(site / ROOT / "worker" / "omni_connector_validation_real.py", real)
    _validate(deployed, "omni_connector_validation_real")


# --- the generation stage's warm-up ---------------------------------------------------------


def test_a_v2_generation_worker_runs_the_model_with_profile_run_alone(deployed: Path) -> None:
    """As vLLM-Omni's GPU generation worker does for V2: the NPU worker's warm-up would run
    ``_dummy_run(size)`` and ``capture_model()`` on the generation runner. Its other steps
    (kernel and ATB warm-ups, CPU binding, seed reset) still run, in their order."""
    runtime.use_generated_runners(deployed, package=WORKERS)
    worker = _worker("generation", _config({"model_runner": "v2"}))
    times = worker.compile_or_warm_up_model()
    assert worker.model_runner.calls == [("profile_run",)]
    assert worker.steps == [
        "kernel_warmup",
        "graph memory 0",
        "atb_warmup",
        "bind_cpus",
        "set_random_seed",
    ]
    assert type(times).__name__ == "CompilationTimes"
    assert not {"_dummy_run", "capture_model"} & set(vars(worker.model_runner)), (
        "the runner's own methods again"
    )


def test_a_v1_generation_worker_and_a_v2_ar_worker_keep_the_npu_warm_up(deployed: Path) -> None:
    runtime.use_generated_runners(deployed, package=WORKERS)
    runtime.use_generated_runners(deployed, package=WORKERS)  # switching again wraps once
    generation = _worker("generation", _config({}))
    generation.compile_or_warm_up_model()
    assert generation.model_runner.calls == [
        ("_dummy_run", 8),
        ("_dummy_run", 4),
        ("capture_model",),
    ]
    ar = _worker("ar", _config({"model_runner": "v2"}))
    ar.compile_or_warm_up_model()
    assert ar.model_runner.calls == [("_dummy_run", 8), ("_dummy_run", 4), ("capture_model",)]


# --- what the V2 tree serves ----------------------------------------------------------------


def test_a_module_below_the_v2_package_is_served_under_its_own_name(deployed: Path) -> None:
    redirected = runtime.use_generated_runners(deployed, package=WORKERS)
    assert f"{V2}.model_states.omni_model_state" in redirected
    module = importlib.import_module(f"{V2}.model_states.omni_model_state")
    assert module.origin == "rebased", "the rebased model state, not the installed one"


# --- the pinned sources ---------------------------------------------------------------------


def _pinned(deployed: Path, releases: tuple[tuple[str, str], ...] = ()) -> Path:
    """The V2 tree's lock pins the fake site's files (and ``releases``: role, label)."""
    rows = [
        lockfile.Source(pins.ROLE, pins.Pin(member, pins.digest(text)).label, pins.digest(text))
        for member, text in PINNED.items()
    ]
    rows += [lockfile.Source(role, label, "") for role, label in releases]
    v2 = deployed / "v2"
    _deployable(v2, Layout.V2, tuple(rows))
    return v2


def _reasons(v2: Path) -> list[str]:
    return runtime.unresolved(v2)


def test_a_tree_whose_pinned_files_are_installed_is_deployable(deployed: Path) -> None:
    assert _reasons(_pinned(deployed)) == []


@pytest.mark.parametrize("member", sorted(PINNED))
def test_a_pinned_file_that_differs_is_refused_by_name(deployed: Path, member: str) -> None:
    v2 = _pinned(deployed)
    site = deployed.parent / "site"
    (site / member).write_text("# another release\n")
    (reason,) = _reasons(v2)
    assert member in reason and f"the installed {pins.distribution(member)}" in reason
    assert "1 of the 1 files" in reason
    with pytest.raises(runtime.NotDeployable, match="v2/: the installed"):
        runtime.use_generated_runners(deployed, package=WORKERS)


def test_another_installed_release_is_refused_naming_both(deployed: Path) -> None:
    site = deployed.parent / "site"
    _installed(site, "vllm-omni", "0.31.0")
    v2 = _pinned(deployed, (("source", "vllm-omni==0.30.0"), ("vllm-base", "vllm==0.30.0")))
    reasons = _reasons(v2)
    assert (
        "the installed vllm-omni is 0.31.0, the runners were generated from vllm-omni==0.30.0"
        in (reasons)
    )
    assert "vllm is not installed here; the runners were generated from vllm==0.30.0" in reasons
    assert len(reasons) == 2, reasons


def test_a_package_that_is_not_installed_is_refused(deployed: Path) -> None:
    v2 = _pinned(deployed)
    site = deployed.parent / "site"
    for path in sorted((site / "vllm_omni").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (site / "vllm_omni").rmdir()
    importlib.invalidate_caches()
    (reason,) = _reasons(v2)
    assert reason.startswith("vllm-omni is not installed here")
    assert "vllm_omni" not in sys.modules, "found, never imported"
