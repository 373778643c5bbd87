"""What the runtime switch assumes of the real packages, checked on their pinned releases,
read as text (nothing here can import vLLM, vllm-ascend or vLLM-Omni): vLLM-Omni 0.30.0's
NPU workers and stage config, vllm-ascend 0.30.0rc2's NPU worker and V2 patch, vLLM 0.30.0's
worker base.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.sources.upstream import package_texts, parse_spec
from omni_port.v2 import ascend as ascend_patches
from omni_port.v2 import stage

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
