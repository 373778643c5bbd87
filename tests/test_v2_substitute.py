"""Classes vllm-ascend substitutes, and the losses a composition must not pass unreviewed.

On ``tests/data/v2/wrap`` (written for these tests): vllm-ascend's patch installs
``init_ascend_model_state`` as vLLM's ``init_model_state``; that factory builds
``AscendModelState(DefaultModelState)`` (or, on a small chip, ``SmallChipModelState``, a
subclass of it) where vLLM's builds ``DefaultModelState``. vLLM-Omni's factory builds
``OmniModelState(DefaultModelState)``: the composition rebases it onto ``AscendModelState``
(its ``remove_request`` composed as an NPU wrapper); a class that cannot be rebased is an
error of ``v2-report``, ``v2-sync``, ``verify`` and the runtime switch unless reviewed.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.model import Code, Rule, Severity, Status
from omni_port.v2 import checks, inputs, pipeline, walk
from tests.conftest import Cli
from tests.golden import DATA

CASE = DATA / "v2" / "wrap"
SETTINGS = inputs.Settings(
    source="omni", upstream="ascend", vllm_base="vllm", vllm=("vllm",), allow="allow.txt"
)
ARGS = ("omni", "--upstream", "ascend", "--vllm-base", "vllm", "--vllm", "vllm")
STATE = "model_states/omni_model_state.py"
GPU = "omni_model_runner.py"
DEFAULT = ("vllm.v1.worker.gpu.model_states.default", "DefaultModelState")
#: A class of a runner module on DefaultModelState: where the composition does not rebase.
SEEDED = (
    "\n\nfrom vllm.v1.worker.gpu.model_states.default import DefaultModelState\n\n\n"
    "class SeededState(DefaultModelState):\n    pass\n"
)


@pytest.fixture
def case(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(CASE)
    return CASE


def _generate(tmp_path: Path, settings: inputs.Settings = SETTINGS) -> pipeline.Result:
    loaded = inputs.load(settings, tmp_path / "cache")
    return pipeline.generate(loaded, "omni-port test", "omni-port v2-sync omni")


def _modules(result: pipeline.Result) -> dict[str, str]:
    return {n: d.decode() for n, d in result.files.items() if n.endswith(".py")}


def _seeded(tmp_path: Path) -> Path:
    omni = tmp_path / "omni"
    shutil.copytree(CASE / "omni", omni)
    runner = omni / "vllm_omni/worker_v2" / GPU
    runner.write_text(runner.read_text() + SEEDED)
    return omni


# --- what vllm-ascend substitutes -----------------------------------------------------------


def test_substitutes_are_read_from_the_patches_and_the_factory_they_install(
    case: Path, tmp_path: Path
) -> None:
    found = {s.original: s for s in inputs.load(SETTINGS, tmp_path / "cache").patches.substitutes}
    state = found[DEFAULT]
    assert state.substitute == ("vllm_ascend.worker.v2.model_states.default", "AscendModelState")
    assert state.factory == ("vllm_ascend.worker.v2.model_states", "init_ascend_model_state")
    assert (state.path, state.line) == ("vllm_ascend/patch/worker/patch_v2/patch_model_state.py", 7)
    assert state.variants == (
        ("vllm_ascend.worker.v2.model_states.small_chip", "SmallChipModelState"),
    ), "a subclass built on another path is a variant, not the substitute"
    assert state.doubt == ""
    batch = found[("vllm.v1.worker.gpu.input_batch", "InputBatch")]
    assert batch.substitute[1] == "AscendInputBatch" and batch.factory is None
    assert ("vllm.v1.worker.gpu.block_table", "BlockTables") not in found, (
        "a replacement bound on a condition substitutes nothing for certain"
    )


# --- the rebase -----------------------------------------------------------------------------


def test_omnis_model_state_is_rebased_and_its_npu_overrides_run_once(
    case: Path, tmp_path: Path
) -> None:
    result = _generate(tmp_path)
    modules = _modules(result)
    tree = ast.parse(modules[STATE])
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OmniModelState")
    assert [ast.unparse(b) for b in cls.bases] == ["AscendModelState"]
    assert [r.module for r in result.rebased] == [STATE]
    texts = {
        STATE: modules[STATE],
        "ascend.py": (CASE / "ascend/vllm_ascend/worker/v2/model_states/default.py").read_text(),
        "vllm.py": (CASE / "vllm/vllm/v1/worker/gpu/model_states/default.py").read_text(),
    }
    world = walk.World(texts)
    for name in ("prepare_attn", "finish_execution"):
        found = world.resolve("OmniModelState", name)
        assert found is not None and found.name == "AscendModelState", name
    removal = walk.runs(world, "OmniModelState", "remove_request", "AscendModelState", {STATE})
    assert len(removal.npu) == 1 and len(removal.bodies) == 1
    assert removal.inside(removal.bodies[0], removal.npu[0]), "omni's inside the NPU wrapper"
    assert "DefaultModelState.remove_request" not in {
        f"{v.owner}.{v.name}" for v in removal.visits
    }, "vLLM's is replaced by omni's, as on the GPU"
    init = walk.runs(world, "OmniModelState", "__init__", "AscendModelState", {STATE})
    assert [v.owner for v in init.visits] == [
        "OmniModelState", "AscendModelState", "DefaultModelState",
    ]  # fmt: skip
    rows = [p for p in result.placements if p.module == STATE]
    assert {(p.member, p.decided_by) for p in rows if p.kind == pipeline.COMPOSED} == {
        ("__init__", (Rule.OMNI_SUPER,)),
        ("remove_request", (Rule.NPU_WRAPPER,)),
    }
    assert [p.owner for p in rows if p.decided_by == (Rule.SUBSTITUTE,)] == [
        "",
        "OmniModelState",
    ], "a row for the import and one for the class header"
    assert result.counts["rebased"] == 1 and result.counts["not_rebased"] == 0


def test_the_wrapper_copy_takes_what_it_needs_from_the_substitutes_module(
    case: Path, tmp_path: Path
) -> None:
    text = _modules(_generate(tmp_path))[STATE]
    imported = [
        (node.module, alias.name)
        for node in ast.parse(text).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    assert ("vllm_ascend.worker.v2.model_states.default", "_forget") in imported
    assert "        _forget(self.offloaded, req_id)\n" in text
    compile(text, STATE, "exec", dont_inherit=True)


def test_a_reviewed_entry_keeps_a_class_on_vllms_class(case: Path, tmp_path: Path) -> None:
    allow = tmp_path / "allow.txt"
    allow.write_text(
        (CASE / "allow.txt").read_text()
        + f"{STATE}:OmniModelState.DefaultModelState  reviewed: no NPU state needed\n"
    )
    result = _generate(tmp_path, replace(SETTINGS, allow=str(allow)))
    assert STATE not in result.files and result.rebased == ()
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    assert errors == []
    kept = [f for f in result.findings if f.code is Code.OP330]
    assert {(f.path, f.severity) for f in kept} == {(GPU, Severity.NOTE)}, (
        "each import of omni's own model state says it was kept, and why"
    )
    assert all(f"kept: reviewed: no NPU state needed ({allow}:5)" in f.message for f in kept)
    assert not [f for f in result.findings if f.code is Code.OP005], "the entry is used"


# --- a class that cannot be rebased ---------------------------------------------------------


def test_a_bypass_in_a_runner_module_fails_the_report_the_sync_and_verify(
    cli: Cli, case: Path, tmp_path: Path
) -> None:
    omni = _seeded(tmp_path)
    report = cli("v2-report", omni, *ARGS[1:], "--v2-allow", "allow.txt")
    assert report.exit_code == 1
    (line,) = [ln for ln in report.stdout.splitlines() if ": OP330 " in ln and "SeededState" in ln]
    assert "not rebased: it is in a runner module" in line
    rebased = [ln for ln in report.stdout.splitlines() if "OmniModelState is built on" in ln]
    assert rebased and "v2-sync rebases it onto AscendModelState" in rebased[0]
    out = tmp_path / "out"
    synced = cli("v2-sync", omni, *ARGS[1:], "--v2-allow", "allow.txt", "--generated", out)
    assert synced.exit_code == 1
    assert f"{GPU}:" in synced.stdout and ": OP330 SeededState is built on" in synced.stdout
    verified = cli("verify", "--generated", out)
    assert verified.exit_code == 1 and ": OP330 SeededState is built on" in verified.stdout
    reasons = runtime.unresolved(out)
    assert any("conflicts marked" in r and "SeededState" in r for r in reasons), reasons
    assert any("verify problems" in r and "OP330" in r for r in reasons), reasons


def test_a_generated_model_state_put_back_on_vllms_class_fails_verify(
    cli: Cli, case: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert cli("v2-sync", *ARGS, "--v2-allow", "allow.txt", "--generated", out).exit_code == 0
    assert cli("verify", "--generated", out).exit_code == 0
    assert not [r for r in runtime.unresolved(out) if "verify" in r]
    state = out / STATE
    text = state.read_text().replace(
        "from vllm_ascend.worker.v2.model_states.default import AscendModelState, _forget",
        "from vllm.v1.worker.gpu.model_states.default import DefaultModelState\n"
        "from vllm_ascend.worker.v2.model_states.default import _forget",
    )
    head, _, tail = text.partition("class OmniModelState(AscendModelState):")
    state.write_text(head + "class OmniModelState(DefaultModelState):\n" + tail.partition("\n")[2])
    line = head.count("\n") + 1
    verified = cli("verify", "--generated", out)
    assert verified.exit_code == 1
    expected = f"{STATE}:{line}:1: OP330 OmniModelState is built on DefaultModelState"
    assert expected in verified.stdout
    reasons = runtime.unresolved(out)
    assert any("verify problems" in r and "OP330" in r for r in reasons), reasons


def test_the_installed_omni_module_a_runner_imports_is_checked_too(
    case: Path, tmp_path: Path
) -> None:
    """Without the generated model state the runners reach omni's own: an error at the import."""
    result = _generate(tmp_path)
    modules = {n: t for n, t in _modules(result).items() if n != STATE}
    from omni_port.v2 import checks

    loaded = inputs.load(SETTINGS, tmp_path / "cache")
    found = [f for f in checks.check(modules, pipeline.against(loaded)) if f.code is Code.OP330]
    assert {(f.path, f.severity) for f in found} == {(GPU, Severity.ERROR)}
    assert all("imports it from the installed vLLM-Omni" in f.message for f in found)
    assert len(found) == 2, "the runner's import and the carried factory's"


# --- reviewed entries -----------------------------------------------------------------------


def test_a_guard_that_selects_no_step_is_an_unused_entry(case: Path, tmp_path: Path) -> None:
    allow = tmp_path / "allow.txt"
    allow.write_text(
        (CASE / "allow.txt").read_text().replace("if dummy_run and self.lmhead_tp", "if never")
    )
    result = _generate(tmp_path, replace(SETTINGS, allow=str(allow)))
    unused = [f for f in result.findings if f.code is Code.OP005]
    assert [(f.path, f.line, f.severity) for f in unused] == [(str(allow), 4, Severity.NOTE)]
    text = _modules(result)["omni_generation_model_runner.py"]
    assert "self.model.compute_logits(self.execute_model_state[1])" in text, "the step stays"


def test_a_guarded_step_is_left_out_of_that_class_only(case: Path, tmp_path: Path) -> None:
    modules = _modules(_generate(tmp_path))
    generation = modules["omni_generation_model_runner.py"]
    assert "self.model.compute_logits(self.execute_model_state[1])" not in generation
    [(_, _, what)] = [t for t in checks.tags(generation) if t[1] == "npu-guard"]
    assert what.startswith("`if dummy_run and self.lmhead_tp")
    assert what.endswith("(allow.txt:4)")
    assert "self.model.compute_logits(self.execute_model_state[1])" in modules[GPU], (
        "the AR and GPU runners serve it"
    )
    rows = [p for p in _generate(tmp_path).placements if p.decided_by == (Rule.GUARD,)]
    assert [(p.module, p.owner, p.member, p.status) for p in rows] == [
        ("omni_generation_model_runner.py", "OmniGenerationModelRunner", "execute_model",
         Status.PLACED),
    ]  # fmt: skip
