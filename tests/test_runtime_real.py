"""What the runtime switch assumes of the real packages, checked on their pinned releases,
read as text (nothing here can import vLLM, vllm-ascend or vLLM-Omni): vLLM-Omni 0.30.0's
NPU workers and stage config, vllm-ascend 0.30.0rc2's NPU worker and V2 patch, vLLM 0.30.0's
worker base.
"""

from __future__ import annotations

import ast
import importlib.abc
from collections.abc import Mapping
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.model import Layout
from omni_port.pyast.packages import World, absolute_module, module_names, unresolved
from omni_port.sources.platform import GPU
from omni_port.sources.upstream import package_texts, parse_spec
from omni_port.v2 import ascend as ascend_patches
from omni_port.v2 import stage
from tests.conftest import Cli

pytestmark = pytest.mark.real

RELEASES = {
    "vllm-omni": ("vllm-omni==0.30.0", "vllm_omni"),
    "vllm-ascend": ("vllm-ascend==0.30.0rc2", "vllm_ascend"),
    "vllm": ("vllm==0.30.0", "vllm"),
}


@pytest.fixture(scope="module")
def texts(cache_dir: Path) -> dict[str, Mapping[str, str]]:
    found: dict[str, Mapping[str, str]] = {}
    for dist, (spec, package) in RELEASES.items():
        loaded = package_texts(parse_spec(spec, dist), package, cache_dir)
        assert loaded, spec
        found[dist] = loaded
    return found


def _classes(text: str) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)}


def _methods(cls: ast.ClassDef) -> set[str]:
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_the_npu_workers_keep_a_runner_class_the_switch_selects_for(
    texts: dict[str, Mapping[str, str]],
) -> None:
    omni = texts["vllm-omni"]
    found = {}
    for module in ("npu_ar_worker", "npu_generation_worker"):
        for cls in _classes(omni[f"vllm_omni/platforms/npu/worker/{module}.py"]).values():
            assigned = {
                ast.unparse(t): ast.unparse(n.value)
                for n in cls.body
                if isinstance(n, ast.Assign)
                for t in n.targets
            }
            if "model_runner_cls" in assigned:
                found[cls.name] = assigned["model_runner_cls"]
                assert "init_device" in _methods(cls), cls.name
    assert found == {
        "NPUARWorker": "NPUARModelRunner",
        "NPUGenerationWorker": "NPUGenerationModelRunner",
    }
    for v1 in found.values():
        module, v2 = runtime.V2_FOR_V1[v1]
        assert v2 in _classes(omni[f"vllm_omni/worker_v2/{module}.py"]), v2
    generation = runtime.V2_FOR_V1[found["NPUGenerationWorker"]][0]
    assert generation == runtime.GENERATION_V2


def test_the_stage_field_the_switch_reads_is_vllm_omnis(
    texts: dict[str, Mapping[str, str]],
) -> None:
    omni = texts["vllm-omni"]
    config = _classes(omni["vllm_omni/config/model.py"])["OmniModelConfig"]
    fields = {ast.unparse(n.target) for n in config.body if isinstance(n, ast.AnnAssign)}
    assert "use_v2_model_runner" in fields and "stage_id" in fields
    stage_config = omni["vllm_omni/config/stage_config.py"]
    assert 'engine_args["use_v2_model_runner"] = deploy.model_runner == "v2"' in stage_config
    # Its GPU workers read the stage's field, not vLLM's flag: the selection the switch mirrors.
    for worker in ("gpu_ar_worker", "gpu_generation_worker"):
        text = omni[f"vllm_omni/worker/{worker}.py"]
        assert 'getattr(self.model_config, "use_v2_model_runner", False)' in text


def test_vllm_ascend_runs_v2_by_the_variable_and_its_worker_has_the_flag(
    texts: dict[str, Mapping[str, str]],
) -> None:
    ascend = texts["vllm-ascend"]
    patch = ascend["vllm_ascend/patch/platform/patch_use_v2_model_runner.py"]
    assert f"envs.{stage.ENV}" in patch and "VllmConfig.use_v2_model_runner = property(" in patch
    worker = _classes(ascend["vllm_ascend/worker/worker.py"])["NPUWorker"]
    assert {"init_device", "compile_or_warm_up_model"} <= _methods(worker)
    assert "self.use_v2_model_runner = self.vllm_config.use_v2_model_runner" in ast.unparse(worker)
    assert runtime.ASCEND_V2_RUNNER in ascend


def test_the_generation_warm_up_keeps_every_step_of_vllm_ascends_but_the_model_runs(
    texts: dict[str, Mapping[str, str]],
) -> None:
    """A generation V2 worker runs NPUWorker.compile_or_warm_up_model with the runner's
    model steps skipped (stage.MODEL_STEPS): those are the only runner methods it calls, and
    the kernel and ATB warm-ups, the CPU binding and the seed reset are its own steps."""
    ascend = texts["vllm-ascend"]
    warm_up = ascend_patches._warm_up(ascend)
    assert warm_up is not None and warm_up.calls == stage.MODEL_STEPS
    worker = _classes(ascend["vllm_ascend/worker/worker.py"])["NPUWorker"]
    method = next(
        n
        for n in worker.body
        if isinstance(n, ast.FunctionDef) and n.name == ascend_patches.WORKER[2]
    )
    called = {ast.unparse(n.func) for n in ast.walk(method) if isinstance(n, ast.Call)}
    assert {"kernel_warmup", "self._warm_up_atb", "bind_cpus", "set_random_seed"} <= called


@pytest.mark.xfail(
    strict=True,
    reason="vLLM-Omni 0.30.0 refuses `model_runner: v2` on NPU in its deploy-config loader "
    "(_apply_platform_overrides raises NotImplementedError) before any worker starts: the "
    "switch selects V2 in the workers, but a deployment reaches them only once vLLM-Omni lifts "
    "that refusal",
)
def test_vllm_omni_lets_a_deploy_config_select_v2_on_npu(
    texts: dict[str, Mapping[str, str]],
) -> None:
    stage_config = texts["vllm-omni"]["vllm_omni/config/stage_config.py"]
    assert "Model Runner V2 is not supported on" not in stage_config


# --- the GPU runners (issue 46) ---------------------------------------------------------------

#: vLLM-Omni's newest release and the vLLM its GPU runners are upgraded onto, as the README's
#: walk-through of the GPU platform does.
GPU_SOURCE, GPU_TARGET = "vllm-omni==0.32.0rc1", "vllm==0.33.0"


def test_the_gpu_platform_names_vllm_omnis_runner_classes(cache_dir: Path) -> None:
    """Each GPU runner module of the release defines the class the platform record names,
    its workers keep it in ``model_runner_cls`` (what the switch rebinds), and its NPU runner
    subclasses the GPU one from the module the switch serves a GPU tree as."""
    omni = package_texts(parse_spec(GPU_SOURCE, "vllm-omni"), "vllm_omni", cache_dir)
    assert omni is not None
    for member, name in zip(GPU.runners, GPU.classes, strict=True):
        assert name in _classes(omni[member]), (member, name)
    kept = {}
    for worker in ("gpu_ar_worker", "gpu_generation_worker"):
        for cls in _classes(omni[f"vllm_omni/worker/{worker}.py"]).values():
            for node in cls.body:
                if (
                    isinstance(node, ast.Assign)
                    and ast.unparse(node.targets[0]) == "model_runner_cls"
                ):
                    kept[cls.name] = ast.unparse(node.value)
    assert kept == {
        "GPUARWorker": "GPUARModelRunner",
        "GPUGenerationWorker": "GPUGenerationModelRunner",
    }
    assert set(kept.values()) <= set(runtime.GPU_RUNNERS.values())
    npu = omni["vllm_omni/platforms/npu/worker/npu_model_runner.py"]
    assert f"from {runtime.GPU_PACKAGE}.gpu_model_runner import OmniGPUModelRunner" in npu


def _imports(tree: ast.Module, package: str) -> list[tuple[int, str, str]]:
    """(line, module, name) of every import in ``tree``, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module(node, package) or ""
            found += [(node.lineno, module, a.name if a.name != "*" else "") for a in node.names]
    return found


def test_the_real_gpu_upgrade_loads_through_the_switch(
    cli: Cli, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU runners of the real upgrade, served by the switch's finder under vLLM-Omni's
    own module names, compile as their loader reads them, and every import of vLLM or
    vLLM-Omni resolves against the downloaded sources (the generated modules standing in for
    the release's own). The switch itself refuses the tree: it keeps the upgrade's conflicts,
    and no vLLM is installed here."""
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    monkeypatch.chdir(tmp_path)
    args = ("--platform", "gpu", GPU_SOURCE, "--base", "detect", "--to", GPU_TARGET)
    assert cli("--cache-dir", cache_dir, "upgrade", *args).exit_code in (0, 1)
    generated = tmp_path / "generated" / "gpu"
    assert runtime.layout_of(generated)[0] is Layout.GPU
    [tree] = runtime.served_trees(generated, runtime.GPU_PACKAGE)
    finder = runtime.GeneratedRunnerFinder(runtime.served_modules(tree))
    assert sorted(finder.files) == sorted(f"{GPU.package}.{m}" for m in runtime.GPU_RUNNERS)
    served = {}
    for name in finder.files:
        spec = finder.find_spec(name)
        assert spec is not None and isinstance(spec.loader, importlib.abc.InspectLoader)
        source = spec.loader.get_source(name)
        assert source is not None and spec.origin == str(finder.files[name])
        compile(source, spec.origin, "exec", dont_inherit=True)
        served[name] = source
    texts: dict[str, str] = {}
    for spec_text, dist, package in ((GPU_TARGET, "vllm", "vllm"),
                                     (GPU_SOURCE, "vllm-omni", "vllm_omni")):  # fmt: skip
        loaded = package_texts(parse_spec(spec_text, dist), package, cache_dir)
        assert loaded is not None, spec_text
        texts.update(module_names(loaded))
    texts.update(served)
    parents = {n.rsplit(".", i)[0] for n in texts for i in range(1, n.count(".") + 1)}
    world = World(texts, frozenset({"vllm", "vllm_omni"}), frozenset(parents))
    checked = [
        (f"{name}:{line}", module, imported)
        for name, source in served.items()
        for line, module, imported in _imports(ast.parse(source), GPU.package)
        if module.split(".")[0] in ("vllm", "vllm_omni")
    ]
    problems = [
        f"{where}: {problem}"
        for where, module, imported in checked
        if (problem := unresolved(world, module, imported)) is not None
    ]
    assert problems == [] and len(checked) > 100, (len(checked), problems)
    # The generated runners import each other as served: the AR runner's base is generated.
    assert ("vllm_omni.worker.gpu_model_runner", "OmniGPUModelRunner") in {
        (module, imported) for _, module, imported in checked
    }
    with pytest.raises(runtime.NotDeployable) as refused:
        runtime.use_generated_runners(generated)
    assert "conflicts left commented out" in str(refused.value)
    assert f"vllm is not installed here; the runners were generated from {GPU_TARGET}" in str(
        refused.value
    )
