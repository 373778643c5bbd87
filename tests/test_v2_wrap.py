"""Model Runner V2 composition where the NPU runner wraps super() and omni's runners replace.

``tests/data/v2/wrap`` is written for these tests and mimics the real pair (vLLM-Omni
0.30.0 on vllm-ascend 0.30.0rc2): an NPU ``execute_model`` that handles preemptions and DP
coordination around ``super().execute_model(...)``, an NPU ``sample_tokens`` that restores
and broadcasts drafts around ``super()``, omni overrides that replace vLLM's bodies, an AR
runner whose ``execute_model`` calls the omni base's through ``super()``, a generation
runner that skips profiling, patch_v2 modules (one only on some hardware, one whose
replacement depends on the chip), a torch.cuda redirect, CUDA-only checks, and metadata
(``ascend/PKG-INFO``, ``omni/vllm_omni/_version.py``) that pair both sides with vLLM 0.30.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.model import Code, Rule, Severity, Status
from omni_port.v2 import ascend, checks, inputs, pipeline, rewrite, walk, wrap
from tests.conftest import Cli
from tests.golden import DATA, check_tree

CASE = DATA / "v2" / "wrap"
SETTINGS = inputs.Settings(
    source="omni", upstream="ascend", vllm_base="vllm", vllm=("vllm",), allow="allow.txt"
)
GPU = "omni_model_runner.py"
AR = "omni_ar_model_runner.py"
GEN = "omni_generation_model_runner.py"
#: omni's model state, rebased onto vllm-ascend's AscendModelState.
STATE = "model_states/omni_model_state.py"
RUNNERS = ("OmniGPUModelRunner", "OmniARModelRunner", "OmniGenerationModelRunner")
ARGS = ("omni", "--upstream", "ascend", "--vllm-base", "vllm", "--vllm", "vllm")


@pytest.fixture
def case(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(CASE)
    return CASE


def _generate(tmp_path: Path, settings: inputs.Settings = SETTINGS) -> pipeline.Result:
    loaded = inputs.load(settings, tmp_path / "cache")
    return pipeline.generate(loaded, "omni-port test", "omni-port v2-sync omni")


def _modules(result: pipeline.Result) -> dict[str, str]:
    return {n: d.decode() for n, d in result.files.items() if n.endswith(".py")}


def _world(result: pipeline.Result) -> walk.World:
    npu = (CASE / "ascend/vllm_ascend/worker/v2/model_runner.py").read_text()
    base = (CASE / "vllm/vllm/v1/worker/gpu/model_runner.py").read_text()
    return walk.World({**_modules(result), "npu.py": npu, "vllm.py": base})


# --- the composition ------------------------------------------------------------------------


def test_generated_modules_match_the_golden_files(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    modules = _modules(result)
    check_tree(CASE / "expected", modules)
    for name, text in modules.items():
        compile(text, name, "exec", dont_inherit=True)
    assert _generate(tmp_path).files == result.files, "a second run changes nothing"


def test_each_method_both_sides_override_has_its_rule(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    rules = {(c.owner, c.name): c.rule for c in result.composed}
    assert rules == {
        ("OmniGPUModelRunner", "__init__"): Rule.OMNI_SUPER,
        ("OmniGPUModelRunner", "load_model"): Rule.OMNI_SUPER,
        ("OmniGPUModelRunner", "execute_model"): Rule.NPU_WRAPPER,
        ("OmniARModelRunner", "sample_tokens"): Rule.NPU_WRAPPER,
        ("OmniGenerationModelRunner", "execute_model"): Rule.NPU_WRAPPER,
        ("OmniGenerationModelRunner", "sample_tokens"): Rule.NPU_WRAPPER,
        ("OmniGenerationModelRunner", "profile_run"): Rule.ALLOWED,
        ("OmniModelState", "__init__"): Rule.OMNI_SUPER,
        ("OmniModelState", "remove_request"): Rule.NPU_WRAPPER,
    }, "the AR execute_model calls the omni base's: composed there"
    rows = {(p.owner, p.member): p for p in result.placements if p.kind == pipeline.COMPOSED}
    assert {k: p.decided_by for k, p in rows.items()} == {k: (r,) for k, r in rules.items()}
    wrapped = rows[("OmniGPUModelRunner", "execute_model")]
    lines = _modules(result)[GPU].splitlines()[wrapped.start - 1 : wrapped.end]
    assert lines[1].strip().startswith("def execute_model(")
    assert any(line.strip().startswith("def _omni_execute_model(") for line in lines)
    assert result.counts["wrapped"] == 5 and result.counts["not_composed"] == 0


@pytest.mark.parametrize("runner", RUNNERS)
def test_execute_model_runs_the_npu_wrapper_once_around_omnis_forward(
    case: Path, tmp_path: Path, runner: str
) -> None:
    """The static walk through the class chain: one NPU wrapper, omni's forward inside."""
    result = _generate(tmp_path)
    found = walk.runs(_world(result), runner, "execute_model", "NPUModelRunner", {GPU, AR, GEN})
    owners = [(v.owner, v.name) for v in found.visits]
    assert len(found.npu) == 1 and len(found.bodies) == 1, owners
    wrapper, body = found.visits[found.npu[0]], found.visits[found.bodies[0]]
    assert wrapper.owner != "NPUModelRunner", "a copy of the wrapper, in omni's class"
    assert found.inside(found.bodies[0], found.npu[0]), "omni's forward runs inside it"
    assert ("NPUModelRunner", "execute_model") not in owners
    assert ("GPUModelRunner", "execute_model") not in owners, "vLLM's body is replaced"
    source = ast.unparse(body.node)
    forward = "decode(" if runner == "OmniGenerationModelRunner" else "make_omni_output("
    assert forward in source


@pytest.mark.parametrize("runner", ["OmniARModelRunner", "OmniGenerationModelRunner"])
def test_sample_tokens_runs_the_npu_steps_once_around_omnis(
    case: Path, tmp_path: Path, runner: str
) -> None:
    result = _generate(tmp_path)
    found = walk.runs(_world(result), runner, "sample_tokens", "NPUModelRunner", {GPU, AR, GEN})
    assert len(found.npu) == 1 and len(found.bodies) == 1
    assert found.inside(found.bodies[0], found.npu[0])
    wrapper = ast.unparse(found.visits[found.npu[0]].node)
    assert "self._restore_draft_states()" in wrapper and "self.broadcast_drafts()" in wrapper


def test_the_ar_runner_keeps_its_own_step_before_the_wrapper(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    found = walk.runs(_world(result), "OmniARModelRunner", "execute_model", "NPUModelRunner", {AR})
    first = found.visits[0]
    assert (first.owner, first.name) == ("OmniARModelRunner", "execute_model")
    assert "self.kv_transfer.prepare(scheduler_output)" in ast.unparse(first.node)


def test_the_wrapper_takes_omnis_signature_and_npus_decorators(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    tree = ast.parse(_modules(result)[GEN])
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == RUNNERS[2])
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    omni = ast.parse((CASE / "omni/vllm_omni/worker_v2" / GEN).read_text())
    original = next(n for n in omni.body if isinstance(n, ast.ClassDef) and n.name == RUNNERS[2])
    theirs = {n.name: n for n in original.body if isinstance(n, ast.FunctionDef)}
    for name in ("execute_model", "sample_tokens"):
        assert checks.signature(methods[name]) == checks.signature(theirs[name])
        assert checks.signature(methods[wrap.body_name(name)]) == checks.signature(theirs[name])
    assert [ast.unparse(d) for d in methods["sample_tokens"].decorator_list] == []
    assert [ast.unparse(d) for d in methods["_omni_sample_tokens"].decorator_list] == [
        "torch.inference_mode()"
    ]


# --- what vllm-ascend installs --------------------------------------------------------------


def test_the_patch_modules_are_read_as_text(case: Path, tmp_path: Path) -> None:
    patches = inputs.load(SETTINGS, tmp_path / "cache").patches
    found = {s.original: (s.replacement, s.doubt) for s in patches.substitutions}
    assert found[("vllm.v1.worker.gpu.dp_utils", "dispatch_cg_and_sync_dp")] == (
        ("vllm_ascend.patch.worker.patch_v2.patch_model_runner", "dispatch_cg_and_sync_dp"), "",
    )  # fmt: skip
    assert found[("vllm.v1.worker.gpu.input_batch", "InputBatch")][0] == (
        "vllm_ascend.worker.v2.input_batch", "AscendInputBatch",
    )  # fmt: skip
    assert found[("vllm.v1.worker.gpu.model_states", "init_model_state")][0][1] == (
        "init_ascend_model_state"
    )
    assert "bound conditionally" in found[("vllm.v1.worker.gpu.block_table", "BlockTables")][1]
    assert found[("vllm.v1.worker.gpu.dp_utils", "skip_dp_coordination")][1] == (
        "imported only on some hardware"
    )
    assert [(c.owner[1], c.attribute) for c in patches.class_patches] == [
        ("GPUModelRunner", "initialize_kv_cache")
    ]
    assert patches.cuda is not None and patches.cuda.entered
    assert patches.cuda.names == {"Event", "Stream", "stream", "current_stream"}


def test_omnis_code_calls_what_the_patches_install(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    text = _modules(result)[GPU]
    imports = {
        (n.module, a.name, a.asname)
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    assert (
        "vllm_ascend.patch.worker.patch_v2.patch_model_runner", "dispatch_cg_and_sync_dp", None,
    ) in imports  # fmt: skip
    assert ("vllm_ascend.worker.v2.input_batch", "AscendInputBatch", "InputBatch") in imports
    assert ("vllm.v1.worker.gpu.dp_utils", "dispatch_cg_and_sync_dp", None) not in imports
    # omni's model-state factory is carried in, its fall-through vllm-ascend's factory.
    factory = ("vllm_ascend.worker.v2.model_states", "init_ascend_model_state")
    assert (*factory, "_upstream_init_model_state") in imports
    assert ("vllm_omni.worker_v2.model_states", "init_omni_model_state", None) not in imports
    assert "def init_omni_model_state(" in text
    assert [c.name for c in result.composition.carried] == ["init_omni_model_state"]
    # A replacement that depends on the chip is not chosen: vLLM's stays, said in the file.
    generation = _modules(result)[GEN]
    lines = generation.splitlines()
    line = next(n for n, ln in enumerate(lines, 1) if "import BlockTables" in ln)
    assert lines[line - 1].startswith("from vllm.v1.worker.gpu.block_table import BlockTables")
    # vLLM-Omni's isort keeps a comment of an import above it (``tidy``).
    above = [what for at, rule, what in checks.tags(generation) if at < line and rule]
    assert above[-1].startswith(rewrite.KEPT)


def test_every_rewrite_is_a_lock_row_and_a_note(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    rows = [p for p in result.placements if p.kind == pipeline.REWRITTEN]
    assert sorted((p.module, p.decided_by[0]) for p in rows) == sorted(
        [
            (AR, Rule.DEVICE_NEUTRAL),
            (GEN, Rule.DEVICE_NEUTRAL),
            (GEN, Rule.DEVICE_NEUTRAL),
            (GEN, Rule.GUARD),
            (GPU, Rule.ASCEND_PATCH),
            (GPU, Rule.ASCEND_PATCH),
            (GPU, Rule.ASCEND_PATCH),
            (GPU, Rule.ASCEND_PATCH),
            (STATE, Rule.ASCEND_PATCH),
            (STATE, Rule.COMMUNICATOR_SWITCH),
            (STATE, Rule.SUBSTITUTE),
            (STATE, Rule.SUBSTITUTE),
        ]
    )
    assert all(p.status is Status.PLACED and p.start == p.end > 0 for p in rows)
    modules = _modules(result)
    for row in rows:
        assert "# omni-port: " in modules[row.module].splitlines()[row.start - 1]
    notes = {(f.code, f.path, f.line) for f in result.findings if f.severity is Severity.NOTE}
    code = {
        Rule.DEVICE_NEUTRAL: Code.OP326,
        Rule.ASCEND_PATCH: Code.OP325,
        Rule.SUBSTITUTE: Code.OP330,
        Rule.GUARD: Code.OP329,
        Rule.COMMUNICATOR_SWITCH: Code.OP331,
    }
    assert {(code[r], p.module, p.start) for p in rows for r in p.decided_by} <= notes
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    assert errors == [], "composed, rewritten and checked: nothing left"


def test_cuda_only_checks_become_device_neutral(case: Path, tmp_path: Path) -> None:
    modules = _modules(_generate(tmp_path))
    assert 'return value.device.type != "cpu"' in modules[AR]
    assert 'return value.device.type != "cpu"' in modules[GEN], "is_cuda too"
    assert '"type", "cpu") != "cpu" and' in modules[GEN]
    for text in modules.values():
        tree = ast.parse(text)
        assert not [
            n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "is_cuda"
        ]
        assert not [
            n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == "cuda"
        ], "no CUDA literal left in code (the tags quote them in comments)"


def test_torch_cuda_reliance_is_stated_where_it_is_used(case: Path, tmp_path: Path) -> None:
    modules = _modules(_generate(tmp_path))
    for name, use in ((AR, "torch.cuda.stream("), (GEN, "torch.cuda.Event(")):
        lines = modules[name].splitlines()
        line = next(n for n, ln in enumerate(lines, 1) if use in ln)
        # On the line, or (a line too long for vLLM-Omni's ruff) on comment lines above it.
        above = line - 1
        while lines[above - 1].lstrip().startswith("#"):
            above -= 1
        tagged = {what for at, rule, what in checks.tags(modules[name]) if above <= at <= line}
        assert any(w.startswith(f"{use[:-1]} runs as") for w in tagged), tagged
        assert all("torch_cuda_wrapper" in w for w in tagged)


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        pytest.param(("torch.cuda.stream(self.main_stream)", "torch.cuda.graph()"), Code.OP327,
                     id="not-redirected"),
        pytest.param(("value.device.type == \"cuda\"", "value.device.type in ('cuda',)"),
                     Code.OP326, id="cuda-check-not-rewritten"),
    ],
)  # fmt: skip
def test_what_cannot_be_made_npu_ready_is_an_error(
    case: Path, tmp_path: Path, edit: tuple[str, str], code: Code
) -> None:
    omni = tmp_path / "omni"
    shutil.copytree(CASE / "omni", omni)
    ar = omni / "vllm_omni/worker_v2" / AR
    ar.write_text(ar.read_text().replace(*edit))
    result = _generate(tmp_path, replace(SETTINGS, source=str(omni)))
    errors = [(f.code, f.path) for f in result.findings if f.severity is Severity.ERROR]
    assert errors == [(code, AR)]


def test_an_override_of_a_method_vllm_ascend_patches_must_reach_it(
    case: Path, tmp_path: Path
) -> None:
    omni = tmp_path / "omni"
    shutil.copytree(CASE / "omni", omni)
    gpu = omni / "vllm_omni/worker_v2" / GPU
    method = (
        "\n    def initialize_kv_cache(self, kv_cache_config: Any) -> None:\n"
        "        self.kv_cache_config = kv_cache_config\n"
    )
    gpu.write_text(gpu.read_text() + method)
    result = _generate(tmp_path, replace(SETTINGS, source=str(omni)))
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    assert [(f.code, f.path) for f in errors] == [(Code.OP325, GPU)]
    assert "patch_model_runner.py:17" in errors[0].message
    delegating = method.replace(
        "self.kv_cache_config = kv_cache_config", "super().initialize_kv_cache(kv_cache_config)"
    )
    gpu.write_text(gpu.read_text().replace(method, delegating))
    result = _generate(tmp_path, replace(SETTINGS, source=str(omni)))
    assert not [f for f in result.findings if f.severity is Severity.ERROR]


# --- what cannot be composed ----------------------------------------------------------------


def test_a_deliberate_skip_is_a_marked_conflict_until_allowed(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path, replace(SETTINGS, allow=""))
    (conflict,) = result.composition.conflicts
    assert (conflict.owner, conflict.name) == ("OmniGenerationModelRunner", "profile_run")
    assert "deliberate skip" in conflict.reason
    row = next(p for p in result.placements if p.member == "profile_run")
    assert row.status is Status.CONFLICT
    text = _modules(result)[GEN].splitlines()
    assert text[row.start - 7].lstrip().startswith("# >>>>>>> omni-port conflict:")
    assert [(f.code, f.line) for f in result.findings if f.code is Code.OP324] == [
        (Code.OP324, row.start)
    ]


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        pytest.param(
            ("        self.kvpp.complete_forward()\n",
             "        self.kvpp.complete_forward()\n        super().execute_model(None)\n"),
            "calls super().execute_model() 2 times", id="two-super-calls",
        ),
        pytest.param(
            ("intermediate_tensors=None, dummy_run=False):",
             "intermediate_tensors=None, **kwargs):"),
            "the parameters differ", id="other-parameters",
        ),
        pytest.param(
            ("        self.kvpp.complete_forward()\n",
             "        self.kvpp.complete_forward()\n        super().load_model()\n"),
            "also calls super().load_model()", id="rerouted-super",
        ),
    ],
)  # fmt: skip
def test_a_wrapper_that_cannot_go_around_omnis_is_a_conflict(
    case: Path, tmp_path: Path, edit: tuple[str, str], why: str
) -> None:
    npu = tmp_path / "ascend"
    shutil.copytree(CASE / "ascend", npu)
    runner = npu / "vllm_ascend/worker/v2/model_runner.py"
    runner.write_text(runner.read_text().replace(*edit, 1))
    result = _generate(tmp_path, replace(SETTINGS, upstream=str(npu)))
    conflicts = {(c.owner, c.name): c.reason for c in result.composition.conflicts}
    assert set(conflicts) == {
        ("OmniGPUModelRunner", "execute_model"),
        ("OmniGenerationModelRunner", "execute_model"),
    }
    assert all(why in reason for reason in conflicts.values()), conflicts
    assert not [f for f in result.findings if f.code is Code.OP329], "marked, so not shadowed"


# --- the checks of a tree on disk -----------------------------------------------------------


def _synced(cli: Cli, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert cli("v2-sync", *ARGS, "--v2-allow", "allow.txt", "--generated", out).exit_code == 0
    return out


def test_verify_passes_the_composed_tree(cli: Cli, case: Path, tmp_path: Path) -> None:
    out = _synced(cli, tmp_path)
    result = cli("verify", "--generated", out)
    assert result.exit_code == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        pytest.param("output = self._omni_execute_model(", "output = super().execute_model(",
                     Code.OP329, id="wrapper-reaches-the-npu-again"),
        pytest.param("        self.kvpp.complete_forward()\n        return output\n",
                     "        self._omni_execute_model(scheduler_output)\n        return output\n",
                     Code.OP329, id="body-twice"),
        pytest.param("    # omni-port: allowed: NPUModelRunner.profile_run", "    # reviewed:",
                     Code.OP329, id="shadow-unmarked"),
        pytest.param("from vllm_ascend.worker.v2.input_batch import AscendInputBatch as InputBatch",
                     "from vllm.v1.worker.gpu.input_batch import InputBatch",
                     Code.OP325, id="replaced-import"),
        pytest.param('"type", "cpu") != "cpu" and', '"type", "cpu") == "cuda" and',
                     Code.OP326, id="cuda-check"),
        pytest.param("def sample_tokens(self, grammar_output: Any | None = None) -> Any:",
                     "def sample_tokens(self, grammar_output: Any | None) -> Any:",
                     Code.OP328, id="signature"),
    ],
)  # fmt: skip
def test_verify_finds_what_an_edit_breaks(
    cli: Cli, case: Path, tmp_path: Path, old: str, new: str, code: Code
) -> None:
    out = _synced(cli, tmp_path)
    edited = [p for p in out.glob("*.py") if old in p.read_text()]
    assert edited, f"nothing to edit: {old!r}"
    for path in edited:
        path.write_text(path.read_text().replace(old, new))
    result = cli("verify", "--generated", out)
    assert result.exit_code == 1
    assert f": {code.value} " in result.stdout, result.stdout


# --- the vLLM pairing -----------------------------------------------------------------------


def _omni_version(tmp_path: Path, version: str) -> Path:
    omni = tmp_path / "omni"
    shutil.copytree(CASE / "omni", omni)
    (omni / "vllm_omni/_version.py").write_text(f'__version__ = "{version}"\n')
    return omni


def test_paired_sides_are_checked_quietly(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    assert not [f for f in result.findings if f.code is Code.OP511]


def test_a_vllm_mismatch_is_refused_naming_both_versions(
    cli: Cli, case: Path, tmp_path: Path
) -> None:
    omni = _omni_version(tmp_path, "0.32.0rc1")
    out = tmp_path / "out"
    result = cli("v2-sync", omni, *ARGS[1:], "--generated", out)
    assert result.exit_code == 2
    assert ": OP511 " in result.stderr
    assert "vllm-omni 0.32.0rc1" in result.stderr and "targets vLLM 0.32" in result.stderr
    assert "runs on vLLM 0.30.0" in result.stderr and "Requires-Dist: vllm==0.30.0" in result.stderr
    assert not out.exists(), "nothing written"
    with pytest.raises(BadInput):
        inputs.load(replace(SETTINGS, source=str(omni)), tmp_path / "cache")


def test_a_forced_mismatch_says_so_in_every_header(cli: Cli, case: Path, tmp_path: Path) -> None:
    omni = _omni_version(tmp_path, "0.32.0rc1")
    out = tmp_path / "out"
    args = ("v2-sync", omni, *ARGS[1:], "--v2-allow", "allow.txt", "--generated", out)
    result = cli(*args, "--force-vllm-mismatch")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert ": OP511 " in result.stdout and "composed anyway" in result.stdout
    for module in (GPU, AR, GEN):
        header = (out / module).read_text().splitlines()[:4]
        assert any(line.startswith("# FORCED despite a vLLM mismatch") for line in header)
        assert any("--force-vllm-mismatch" in line for line in header), "regenerates forced"
    assert cli(*args, "--force-vllm-mismatch", "--check").exit_code == 0
    assert cli("verify", "--generated", out).exit_code == 0, "verify regenerates it forced"


def test_the_report_notes_a_mismatch_instead_of_refusing(
    cli: Cli, case: Path, tmp_path: Path
) -> None:
    omni = _omni_version(tmp_path, "0.32.0rc1")
    result = cli("v2-report", omni, *ARGS[1:])
    assert result.exit_code == 1, "wrapper collisions"
    assert ": OP511 " in result.stdout and ": OP323 " in result.stdout


# --- the commands ---------------------------------------------------------------------------


def test_v2_report_shows_wrapper_collisions_and_their_composition(cli: Cli, case: Path) -> None:
    result = cli("v2-report", *ARGS)
    assert result.exit_code == 1
    row = next(
        ln
        for ln in result.stdout.splitlines()
        if ln.strip().startswith("both") and "execute_model" in ln and "OmniGPU" in ln
    )
    assert "WRAPPER-COLLISION" in row and row.endswith("=> npu-wrapper")
    collisions = sorted(
        ln.split(" and ")[1].split(" replaces")[0]
        for ln in result.stdout.splitlines()
        if ": OP323 " in ln
    )
    assert collisions == [
        "OmniARModelRunner.sample_tokens",
        "OmniGPUModelRunner.execute_model",
        "OmniGenerationModelRunner.execute_model",
        "OmniGenerationModelRunner.profile_run",
        "OmniGenerationModelRunner.sample_tokens",
        "OmniModelState.remove_request",
    ], "the AR execute_model reaches the base's: its collision is the base's"


def test_v2_sync_help_names_its_options(cli: Cli) -> None:
    text = cli("v2-sync", "--help").stdout
    assert "--v2-allow" in text and "--force-vllm-mismatch" in text
    assert "--allow " not in text and "until --allow" not in text


def test_verify_says_how_to_resolve_a_v2_conflict(cli: Cli, case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("v2-sync", *ARGS, "--generated", out).exit_code == 1
    result = cli.loud("verify", "--generated", out)
    assert result.exit_code == 1
    assert "omni-port resolve" not in result.stderr, "resolve has nothing to record for V2"
    assert "OmniGenerationModelRunner.profile_run  REASON" in result.stderr
    assert "--v2-allow" in result.stderr


def test_reading_a_tree_without_patch_modules_finds_none() -> None:
    runner = ascend.VllmRunner("vllm.v1.worker.gpu.model_runner", {})
    found = ascend.read_patches({}, runner, "class NPUModelRunner:\n    pass\n")
    assert found == ascend.AscendPatches()
