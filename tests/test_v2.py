"""Model Runner V2: the override report and the composed NPU runners, on a three-way fixture.

``tests/data/v2/compose`` is written for these tests: a tiny vLLM V2 base
(``GPUModelRunner``), a vllm-ascend V2 runner (``NPUModelRunner``) and two vLLM-Omni V2
runners. Between them they hold every override case: omni only, NPU only, both with
``super()`` on one side or both sides, and both with neither delegating (omni's copy of
vLLM's method spliced into the NPU override: one hunk placed, one conflict), plus an omni
replacement that shadows a delegating NPU override, an NPU override omni bypasses, and
calls into the NPU and vLLM runners they cannot take (``vllm_new`` is a later vLLM with
one more method).
"""

from __future__ import annotations

import ast
import json
import shlex
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.model import Code, Layout, Rule, Severity, Status
from omni_port.patches import lockfile
from omni_port.v2 import checks, compose, inputs, overrides, pins, pipeline, tidy
from tests.conftest import Cli
from tests.golden import DATA, check_file, check_tree

CASE = DATA / "v2" / "compose"
SETTINGS = inputs.Settings(
    source="omni", upstream="ascend", vllm_base="vllm", vllm=("vllm_new", "vllm")
)
COMMAND = (
    "omni-port v2-sync omni --upstream ascend --vllm-base vllm --vllm vllm_new --generated out"
)
GPU = "omni_model_runner.py"
CONFLICTS = (Code.OP301, Code.OP324)
GEN = "omni_generation_model_runner.py"


@pytest.fixture
def case(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run inside the fixture, so reports show short stable paths."""
    monkeypatch.chdir(CASE)
    return CASE


def _load(tmp_path: Path, settings: inputs.Settings = SETTINGS) -> pipeline.Inputs:
    return inputs.load(settings, tmp_path / "cache")


def _generate(tmp_path: Path, settings: inputs.Settings = SETTINGS) -> pipeline.Result:
    return pipeline.generate(_load(tmp_path, settings), "omni-port test", COMMAND)


def _rows(result: overrides.OverrideReport, runner: str) -> dict[str, tuple[str, ...]]:
    """Each method: who, then which sides delegate, then whether it collides."""
    found = next(r for r in result.runners if r.runner == runner)
    table = {}
    for row in found.rows:
        flags = [row.who.value]
        flags += ["omni-super"] if row.omni is not None and row.omni.delegates else []
        flags += ["npu-super"] if row.npu is not None and row.npu.delegates else []
        flags += ["collision"] if row.collision else []
        table[row.name] = tuple(flags)
    return table


# --- the override report --------------------------------------------------------------------


def test_report_says_who_overrides_every_method(case: Path, tmp_path: Path) -> None:
    report = pipeline.report(_load(tmp_path))
    assert _rows(report, "OmniGPUModelRunner") == {
        "__init__": ("both", "omni-super", "npu-super"),
        "compute_logits": ("both", "collision"),
        "load_model": ("both", "omni-super"),
        "sample_tokens": ("both", "collision"),
        "_omni_helper": ("omni",),
        "execute_model": ("omni",),
        "postprocess_sampled": ("npu", "npu-super"),
        "prepare_inputs": ("npu",),
        "profile_run": ("npu", "npu-super"),
        "get_model": ("neither",),
    }
    generation = _rows(report, "OmniGenerationModelRunner")
    assert generation["profile_run"] == ("both", "npu-super")
    assert generation["execute_model"] == ("omni",)
    assert generation["sample_tokens"] == ("both", "collision")


def test_omni_site_is_the_first_override_and_delegation_follows_the_omni_chain(
    case: Path, tmp_path: Path
) -> None:
    report = pipeline.report(_load(tmp_path))
    init = report.row("OmniGenerationModelRunner", "__init__")
    assert init is not None and init.omni is not None
    assert (init.omni.owner, init.omni.line, init.omni.delegates) == (
        "OmniGenerationModelRunner", 10, True,
    )  # fmt: skip
    inherited = next(r for r in report.runners if r.runner == "OmniGenerationModelRunner")
    load = next(row for row in inherited.rows if row.name == "load_model")
    assert load.omni is not None and load.omni.owner == "OmniGPUModelRunner"
    # The generation runner's sample_tokens calls the omni base's, which collides: the
    # collision (and the merge) is the base's, and the subclass adds no conflict of its own.
    sample = report.row("OmniGenerationModelRunner", "sample_tokens")
    assert sample is not None and sample.omni is not None and sample.collision
    assert [cls for cls, _, _ in sample.omni.chain] == [
        "OmniGenerationModelRunner", "OmniGPUModelRunner",
    ]  # fmt: skip
    assert sample.omni.last[0] == "OmniGPUModelRunner"


def test_each_collision_once_with_both_locations(case: Path, tmp_path: Path) -> None:
    report = pipeline.report(_load(tmp_path))
    collisions = [f for f in report.findings if f.code is Code.OP320]
    omni = "omni/vllm_omni/worker_v2/omni_model_runner.py"
    assert [(f.path, f.line, f.severity) for f in collisions] == [
        (omni, 25, Severity.ERROR),
        (omni, 34, Severity.ERROR),
    ]
    assert "ascend/vllm_ascend/worker/v2/model_runner.py:27" in collisions[0].message
    assert "ascend/vllm_ascend/worker/v2/model_runner.py:33" in collisions[1].message


def test_an_npu_override_omni_no_longer_calls_is_an_error_until_reviewed(
    case: Path, tmp_path: Path
) -> None:
    report = pipeline.report(_load(tmp_path))
    (bypass,) = [f for f in report.findings if f.code is Code.OP321]
    assert (bypass.path, bypass.line, bypass.severity) == (
        "omni/vllm_omni/worker_v2/omni_generation_model_runner.py", 18, Severity.ERROR,
    )  # fmt: skip
    assert "self.prepare_inputs()" in bypass.message
    entry = "omni_generation_model_runner.py:OmniGenerationModelRunner.execute_model:prepare_inputs"
    assert f"`{entry}  REASON`" in bypass.message, "says which entry would review it"
    allow = tmp_path / "allow.txt"
    allow.write_text(f"{entry}  a vocoder reads its codes itself\n")
    reviewed = pipeline.report(_load(tmp_path, replace(SETTINGS, allow=str(allow))))
    (bypass,) = [f for f in reviewed.findings if f.code is Code.OP321]
    assert bypass.severity is Severity.NOTE
    assert f"a vocoder reads its codes itself ({allow}:1)" in bypass.message
    other = tmp_path / "other.txt"
    other.write_text(entry.replace("prepare_inputs", "profile_run") + "  another override\n")
    unreviewed = pipeline.report(_load(tmp_path, replace(SETTINGS, allow=str(other))))
    assert [f.severity for f in unreviewed.findings if f.code is Code.OP321] == [Severity.ERROR]


def test_calls_the_composed_runner_cannot_take(case: Path, tmp_path: Path) -> None:
    report = pipeline.report(_load(tmp_path))
    calls = [f for f in report.findings if f.code is Code.OP322]
    omni = "omni/vllm_omni/worker_v2/omni_model_runner.py"
    assert [(f.path, f.line, f.col, f.severity) for f in calls] == [
        (omni, 43, 17, Severity.ERROR),
        (omni, 44, 9, Severity.ERROR),
    ]
    assert "gather_state" in calls[0].message and "(vllm_new does)" in calls[0].message
    assert "NPUModelRunner.postprocess_sampled" in calls[1].message
    assert "takes 2 positional arguments, the call passes 3" in calls[1].message


def test_report_needs_the_runner_classes(case: Path, tmp_path: Path) -> None:
    loaded = _load(tmp_path)
    generation_only = {GEN: loaded.omni[GEN]}
    with pytest.raises(BadInput) as caught:
        overrides.override_report(pipeline.parse_sides(generation_only, loaded.npu, loaded.base))
    assert caught.value.findings[0].code is Code.OP004


# --- the composed runners -------------------------------------------------------------------


def test_composed_modules_match_the_golden_files(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    modules = {n: d.decode() for n, d in result.files.items() if n.endswith(".py")}
    check_tree(CASE / "expected", modules)
    for name, text in modules.items():
        compile(text, name, "exec", dont_inherit=True)
    again = _generate(tmp_path)
    assert again.files == result.files, "a second run must give byte-identical outputs"


def _class(text: str, name: str) -> ast.ClassDef:
    tree = ast.parse(text)
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_each_override_case_lands_as_specified(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    text = result.files[GPU].decode()
    cls = _class(text, "OmniGPUModelRunner")
    assert [ast.unparse(b) for b in cls.bases] == ["NPUModelRunner"], "re-based onto the NPU"
    methods = _methods(cls)
    # NPU only: inherited, not generated.
    assert "prepare_inputs" not in methods and "postprocess_sampled" not in methods
    # Omni only, and both with omni delegating: omni's, verbatim.
    source = (CASE / "omni/vllm_omni/worker_v2" / GPU).read_text()
    for name in ("_omni_helper", "execute_model", "load_model", "__init__"):
        assert ast.unparse(methods[name]) == ast.unparse(_methods(_class(source, cls.name))[name])
    # Both, neither delegating: the NPU override with omni's hunk placed in it.
    sample = ast.unparse(methods["sample_tokens"])
    assert "self.stream.synchronize()" in sample and "self.buffers.update(" in sample
    assert result.composition.spliced == (
        (GPU, "OmniGPUModelRunner", "compute_logits"),
        (GPU, "OmniGPUModelRunner", "sample_tokens"),
    )
    generation = _class(result.files[GEN].decode(), "OmniGenerationModelRunner")
    assert [ast.unparse(b) for b in generation.bases] == ["OmniGPUModelRunner"]


def test_placements_and_conflicts(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path)
    rows = {p.block_id: p for p in result.placements}
    assert rows["omni_model_runner.OmniGPUModelRunner.sample_tokens.edit-01"].status is (
        Status.PLACED
    )
    conflict = rows["omni_model_runner.OmniGPUModelRunner.compute_logits.edit-01"]
    assert conflict.status is Status.CONFLICT and conflict.candidates
    composed = {p.member: p for p in result.placements if p.kind == pipeline.COMPOSED}
    assert {m: (p.status, p.decided_by) for m, p in composed.items()} == {
        "__init__": (Status.CARRIED, (Rule.OMNI_SUPER,)),
        "load_model": (Status.CARRIED, (Rule.OMNI_SUPER,)),
        "compute_logits": (Status.PLACED, (Rule.NPU_SPLICE,)),
        "sample_tokens": (Status.PLACED, (Rule.NPU_SPLICE,)),
        "profile_run": (Status.CONFLICT, ()),
    }, "the generation runner's sample_tokens and __init__ reach the base's"
    shadowed = composed["profile_run"]
    assert shadowed.owner == "OmniGenerationModelRunner"
    lines = result.files[GEN].decode().splitlines()
    body = lines[shadowed.start - 1 : shadowed.end]
    assert body[0].strip() == "def profile_run(self):" and "synchronize" in body[-1]
    region = lines[shadowed.start - 7 : shadowed.start - 1]
    assert region[0].strip().startswith("# >>>>>>> omni-port conflict:"), "marked in the file"
    assert region[-1].strip() == "# <<<<<<< omni-port conflict end"
    codes = sorted((f.code, f.path, f.line) for f in result.findings if f.code in CONFLICTS)
    # The engine's conflict is reported where it sits in the generated module.
    text = result.files[conflict.module].decode().splitlines()
    line = next(n for n, t in enumerate(text, 1) if f"conflict: {conflict.block_id}" in t)
    assert line == conflict.start
    assert codes == sorted([(Code.OP324, GEN, shadowed.start), (Code.OP301, conflict.module, line)])


def test_an_allowed_shadowing_is_carried_and_a_stale_entry_is_a_note(
    case: Path, tmp_path: Path
) -> None:
    stale = tmp_path / "allow.txt"
    stale.write_text((CASE / "allow.txt").read_text() + "omni_model_runner.py:X.y  gone\n")
    result = _generate(tmp_path, replace(SETTINGS, allow=str(stale)))
    row = next(p for p in result.placements if p.member == "profile_run")
    assert (row.kind, row.status, row.decided_by) == (
        pipeline.COMPOSED, Status.CARRIED, (Rule.ALLOWED,),
    )  # fmt: skip
    notes = [f for f in result.findings if f.code is Code.OP005]
    assert [(f.line, f.severity) for f in notes] == [(3, Severity.NOTE)]
    assert not [f for f in result.findings if f.code is Code.OP324]
    text = result.files[GEN].decode()
    lines = text.splitlines()[: row.start - 1]
    at = len(lines) - next(n for n, ln in enumerate(reversed(lines)) if "#   " not in ln)
    assert lines[at - 1].strip().startswith("# omni-port: allowed: NPUModelRunner.profile_run")
    (above,) = [what for line, rule, what in checks.tags(text) if line == at]
    assert "a vocoder has no KV cache" in above, "the reviewed reason is in the file"


def test_a_documented_one_statement_method_is_omni_s_not_a_delta(
    case: Path, tmp_path: Path
) -> None:
    """The Code2Wav ``profile_run`` skip (a docstring and one of vLLM's statements) is no
    copy of vLLM's method (issue 46: a docstring is no copied code), so nothing of it is
    spliced into the NPU override as omni's delta."""
    loaded = _load(tmp_path)
    found = pipeline.delta(loaded)
    copies = {(m.copy.owner, m.copy.name) for m in found.methods}
    assert ("OmniGenerationModelRunner", "profile_run") not in copies
    result = _generate(tmp_path)
    assert (GEN, "OmniGenerationModelRunner", "profile_run") not in result.composition.spliced


def test_the_lock_records_the_v2_layout_and_every_input(case: Path, tmp_path: Path) -> None:
    result = _generate(tmp_path, replace(SETTINGS, allow="allow.txt"))
    text = result.files[lockfile.LOCK_NAME].decode()
    lock = lockfile.parse(text, "omni-port.lock")
    assert lock.layout is Layout.V2 and lock.upstream == "ascend"
    assert [(s.role, s.label) for s in lock.sources if s.role != pins.ROLE] == [
        ("source", "omni"), ("vllm-base", "vllm"), ("vllm", "vllm_new"), ("vllm", "vllm"),
        ("allow", "allow.txt"),
    ]  # fmt: skip
    # What the runtime switch compares with the installed packages: omni's runner modules
    # and vLLM's runner, file by file (this vllm-ascend has no patch modules to pin).
    pinned = {s.label: s.sha256 for s in lock.sources if s.role == pins.ROLE}
    omni = (CASE / "omni/vllm_omni/worker_v2" / GPU).read_text()
    assert pinned == {
        "vllm-omni:vllm_omni/worker_v2/omni_generation_model_runner.py": pins.digest(
            (CASE / "omni/vllm_omni/worker_v2" / GEN).read_text()
        ),
        f"vllm-omni:vllm_omni/worker_v2/{GPU}": pins.digest(omni),
        "vllm:vllm/v1/worker/gpu/model_runner.py": pins.digest(
            (CASE / "vllm/vllm/v1/worker/gpu/model_runner.py").read_text()
        ),
    }
    assert lockfile.render(lock) == text
    assert sorted(lock.outputs) == [GEN, GPU]


# --- rebase ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param("class A(Base):\n", "class A(NPU):\n", id="header"),
        pytest.param("class A(mixin, Base, x=1):\n", "class A(mixin, NPU, x=1):\n", id="keyword"),
        pytest.param("class A(\n    Base,\n):\n", "class A(\n    NPU,\n):\n", id="wrapped"),
        pytest.param("class A(other.Base):\n", "class A(other.Base):\n", id="attribute"),
        pytest.param("class A(BaseX):\n    pass\n", "class A(BaseX):\n    pass\n", id="other"),
        pytest.param("x = Base\n", "x = Base\n", id="no-class"),
    ],
)
def test_rebase(code: str, expected: str) -> None:
    assert compose.rebase(code, "Base", "NPU") == expected


# --- inputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("upstream", "expected"),
    [
        pytest.param("vllm-ascend==0.26.0rc1", "vllm==0.26.0", id="rc"),
        pytest.param("0.23.0", "vllm==0.23.0", id="bare"),
        pytest.param("vllm-ascend==0.23.0.post1", "vllm==0.23.0", id="post"),
    ],
)
def test_paired_vllm(upstream: str, expected: str, tmp_path: Path) -> None:
    assert inputs.paired_vllm(upstream, tmp_path) == expected


def test_paired_vllm_of_a_checkout_reads_its_version(tmp_path: Path) -> None:
    version = tmp_path / "checkout" / "vllm_ascend" / "_version.py"
    version.parent.mkdir(parents=True)
    version.write_text("__version__ = version = '0.25.1rc1'\n")
    assert inputs.paired_vllm(str(tmp_path / "checkout"), tmp_path) == "vllm==0.25.1"
    with pytest.raises(BadInput) as caught:
        inputs.paired_vllm(str(tmp_path / "elsewhere"), tmp_path)
    assert caught.value.findings[0].code is Code.OP005


# --- the commands ---------------------------------------------------------------------------

SOURCE_ARGS = ("omni", "--upstream", "ascend", "--vllm-base", "vllm")
REPORT_ARGS = (*SOURCE_ARGS, "--vllm", "vllm_new")
VLLM = ("--vllm", "vllm")


def test_v2_report_exit_1_on_collisions(cli: Cli, case: Path) -> None:
    result = cli("v2-report", *REPORT_ARGS)
    assert result.exit_code == 1
    assert "COLLISION" in result.stdout
    assert "OP320" in result.stdout and "OP321" in result.stdout


def test_v2_report_json_to_stdout_is_only_json(cli: Cli, case: Path) -> None:
    result = cli("v2-report", *REPORT_ARGS, "--json", "-")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    runners = {r["class"]: r for r in document["runners"]}
    methods = {m["name"]: m for m in runners["OmniGPUModelRunner"]["methods"]}
    assert methods["compute_logits"]["collision"] is True
    assert methods["compute_logits"]["npu"]["line"] == 27
    assert document["counts"]["collisions"] == 2
    assert [f["code"] for f in document["findings"]] == [
        "OP511", "OP320", "OP323", "OP320", "OP321", "OP322", "OP322",
    ]  # fmt: skip
    assert document["counts"]["wrapper_collisions"] == 1
    profile = next(
        m for m in runners["OmniGenerationModelRunner"]["methods"] if m["name"] == "profile_run"
    )
    assert profile["wrapper_collision"] is True and profile["collision"] is False
    assert profile["composed"]["rule"] is None, "a deliberate skip is not wrapped"


def test_v2_report_text_is_golden(cli: Cli, case: Path) -> None:
    check_file(CASE / "report.txt", cli("v2-report", *REPORT_ARGS).stdout)


def test_v2_report_exit_0_without_collisions(cli: Cli, tmp_path: Path) -> None:
    omni = tmp_path / "omni" / "vllm_omni" / "worker_v2"
    omni.mkdir(parents=True)
    (omni / GPU).write_text(
        "from vllm.v1.worker.gpu.model_runner import GPUModelRunner\n\n\n"
        "class OmniGPUModelRunner(GPUModelRunner):\n"
        "    def __init__(self, *args):\n        super().__init__(*args)\n"
    )
    result = cli(
        "v2-report", omni.parent.parent, "--upstream", CASE / "ascend",
        "--vllm-base", CASE / "vllm", "--vllm", CASE / "vllm",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_v2_report_notes_steps_the_pinned_vllm_has_and_omni_s_copy_lacks(
    cli: Cli, case: Path, tmp_path: Path
) -> None:
    """omni's execute_model copies the fixture's vLLM; a later vLLM under the NPU runner
    adds a step omni's copy never received: a note (OP335), not an error."""
    later = tmp_path / "later"
    shutil.copytree(CASE / "vllm", later)
    runner = later / "vllm/v1/worker/gpu/model_runner.py"
    step = "        hidden = self.model(input_batch)\n"
    text = runner.read_text()
    runner.write_text(text.replace(step, step + "        self.kv_connector.finish_forward()\n"))
    result = cli("v2-report", *SOURCE_ARGS[:3], "--vllm-base", later, *VLLM, "--json", "-")
    document = json.loads(result.stdout)
    lags = [f for f in document["findings"] if f["code"] == "OP335"]
    assert [(f["path"], f["line"], f["severity"]) for f in lags] == [
        ("omni/vllm_omni/worker_v2/omni_model_runner.py", 16, "note")
    ]
    assert f"`self.kv_connector.finish_forward()` ({later}/" in lags[0]["message"]
    assert "copy of vllm's GPUModelRunner.execute_model" in lags[0]["message"]
    assert document["counts"]["lagging_steps"] == 1


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(("nowhere", "--upstream", "ascend"), "OP003", id="missing-source"),
        pytest.param(("omni", "--upstream", "vllm", "--vllm-base", "vllm"), "OP003", id="no-npu"),
        pytest.param(("omni", "--upstream", "nowhere/x.py"), "OP003", id="unreadable"),
        pytest.param(SOURCE_ARGS, "OP005", id="no-target-vllm"),
    ],
)
def test_v2_report_bad_input_exit_2(cli: Cli, case: Path, args: tuple[str, ...], code: str) -> None:
    result = cli("v2-report", *args)
    assert result.exit_code == 2
    assert f": {code} " in result.stderr
    assert result.stdout == ""


def test_v2_report_missing_npu_class_exit_2(cli: Cli, case: Path, tmp_path: Path) -> None:
    upstream = tmp_path / "model_runner.py"
    upstream.write_text("class SomethingElse:\n    pass\n")
    result = cli("v2-report", "omni", "--upstream", upstream, "--vllm-base", "vllm", *VLLM)
    assert result.exit_code == 2
    assert f"{upstream}:0:1: OP004" in result.stderr


def test_v2_sync_writes_checks_and_diffs(cli: Cli, case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = (
        "v2-sync",
        *SOURCE_ARGS,
        "--vllm",
        "vllm_new",
        "--v2-allow",
        "allow.txt",
        "--generated",
        out,
    )
    first = cli(*args)
    assert first.exit_code == 1, "compute_logits stays a conflict"
    assert sorted(p.name for p in out.iterdir()) == [lockfile.LOCK_NAME, GEN, GPU]
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    edited = out / GPU
    edited.write_text(edited.read_text() + "# edited by hand\n")
    check = cli(*args, "--check", "--diff")
    assert check.exit_code == 1
    assert "-# edited by hand" in check.stdout
    assert edited.read_text().endswith("# edited by hand\n"), "--check writes nothing"
    refused = cli(*args)
    assert refused.exit_code == 2 and ": OP207 " in refused.stderr, refused.stderr
    assert edited.read_text().endswith("# edited by hand\n"), "a hand edit is never lost"
    assert cli(*args, "--discard-edits").exit_code == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == written
    # The header's Regenerate command is one the CLI takes, and it reproduces the tree.
    regenerate = tidy.regenerate_command(written[GPU].decode()).removeprefix("omni-port ")
    assert f"--generated {out}" in regenerate, "the whole command, wrapped or not"
    assert "--v2-allow allow.txt" in regenerate
    rerun = cli(*shlex.split(regenerate), "--check")
    assert rerun.exit_code == 1 and "OP304" not in rerun.stdout + rerun.stderr, rerun.stderr


def test_v2_sync_exit_0_when_clean_and_current(cli: Cli, tmp_path: Path) -> None:
    omni = tmp_path / "omni" / "vllm_omni" / "worker_v2"
    omni.mkdir(parents=True)
    (omni / GPU).write_text(
        "from vllm.v1.worker.gpu.model_runner import GPUModelRunner\n\n\n"
        "class OmniGPUModelRunner(GPUModelRunner):\n"
        "    def __init__(self, *args):\n        super().__init__(*args)\n"
    )
    args = (
        "v2-sync", omni.parent.parent, "--upstream", CASE / "ascend", "--vllm-base",
        CASE / "vllm", "--vllm", CASE / "vllm", "--generated", tmp_path / "out",
    )  # fmt: skip
    assert cli(*args).exit_code == 0
    assert cli(*args, "--check").exit_code == 0


def test_verify_reads_a_v2_tree_by_its_lock(cli: Cli, case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cli("v2-sync", *SOURCE_ARGS, "--vllm", "vllm_new", "--generated", out)
    result = cli("verify", "--generated", out, "--json", tmp_path / "verify.json")
    document = json.loads((tmp_path / "verify.json").read_text())
    found = [f for f in document["findings"] if f["severity"] == "error"]
    # Checked against the lock's vLLM base (the fixture's): omni's helper passes three
    # arguments to the NPU postprocess_sampled, which takes two (v2-report's OP322 too).
    (misfit,) = [f for f in found if f["code"] == "OP510"]
    assert "`self.postprocess_sampled(...)` passes 3 positional arguments" in misfit["message"]
    # The generation runner's execute_model skips the NPU prepare_inputs, unreviewed.
    (bypass,) = [f for f in found if f["code"] == "OP321"]
    assert "self.prepare_inputs()" in bypass["message"]
    # Besides, the tree holds the conflicts `v2-sync` left: nothing else is wrong with it.
    errors = [f for f in found if f["code"] not in ("OP510", "OP321")]
    assert {f["code"] for f in errors} == {"OP310"}, document["findings"]
    regions = [
        (name, n)
        for name in (GPU, "omni_generation_model_runner.py")
        for n, line in enumerate((out / name).read_text().splitlines(), 1)
        if "# >>>>>>> omni-port conflict:" in line
    ]
    assert sorted((Path(f["path"]).name, f["line"]) for f in errors) == sorted(regions)
    assert result.exit_code == 1
    imported = "from vllm.v1.worker.gpu.model_runner import make_output\n"
    (out / GPU).write_text((out / GPU).read_text().replace(imported, ""))
    broken = cli("verify", "--generated", out)
    assert broken.exit_code == 1
    block = "omni_model_runner.OmniGPUModelRunner.sample_tokens.edit-01"
    lock = json.loads((out / lockfile.LOCK_NAME).read_text())
    (line,) = {r["lines"][0] for r in lock["placements"] if r["id"] == block}
    assert f"{GPU}:{line}:1: OP507 block {block} " in (broken.stdout)


def _v2_workspace(folder: Path) -> Path:
    """A configuration that turns V2 on, on the stand-in pairs (V1's and V2's)."""
    config = folder / "pyproject.toml"
    config.write_text(
        "[tool.omni-port]\n"
        f'source = "{DATA / "omni"}"\n'
        f'upstream = "{DATA / "upstream/v1/model_runner_v1.py"}"\n'
        f'v2-source = "{CASE / "omni"}"\n'
        f'v2-upstream = "{CASE / "ascend"}"\n'
        f'v2-vllm-base = "{CASE / "vllm"}"\n'
        f'v2-vllm = "{CASE / "vllm_new"} {CASE / "vllm"}"\n'
        f'v2-allow = "{CASE / "allow.txt"}"\n'
    )
    return config


def test_configured_v2_joins_sync_verify_and_check(cli: Cli, tmp_path: Path) -> None:
    """A workspace whose [tool.omni-port] turns V2 on: one `sync`, `verify`, `check`."""
    config = _v2_workspace(tmp_path)
    v2_out = tmp_path / "generated" / "v2"
    assert cli("--config", config, "extract").exit_code == 0
    synced = cli("--config", config, "sync")
    assert synced.exit_code == 1, "the compute_logits conflict of the V2 tree"
    assert sorted(p.name for p in v2_out.iterdir()) == [lockfile.LOCK_NAME, GEN, GPU]
    assert (tmp_path / "generated" / lockfile.LOCK_NAME).is_file(), "V1 is synced as before"
    verified = cli.loud("--config", config, "verify")
    assert "verify: 5 modules" in verified.stderr
    assert cli("--config", config, "check", "--no-cache").stdout.count("OP406") == 0
    edited = v2_out / GEN
    edited.write_text(edited.read_text() + "# edited by hand\n")
    stale = cli("--config", config, "check", "--no-cache")
    assert stale.exit_code == 1
    assert f"{v2_out / GEN}:" in stale.stdout or f"generated/v2/{GEN}" in stale.stdout
    assert ": OP406 " in stale.stdout


def test_the_configured_v2_lock_names_the_allow_list_from_the_root(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The V2 lock is committed (generated/.gitignore): it must not depend on where the
    checkout lies. The allow-list is recorded relative to the root, like `--generated`, and
    verify, run from elsewhere, finds it there."""
    config = _v2_workspace(tmp_path)
    shutil.copy(CASE / "allow.txt", tmp_path / "v2-allow.txt")
    text = config.read_text().replace(str(CASE / "allow.txt"), "v2-allow.txt")
    config.write_text(text)
    assert cli("--config", config, "extract").exit_code == 0
    assert cli("--config", config, "sync").exit_code == 1
    lock = lockfile.read_or_none(tmp_path / "generated" / "v2")
    assert lock is not None
    assert [s.label for s in lock.sources if s.role == "allow"] == ["v2-allow.txt"]
    assert "--v2-allow v2-allow.txt " in lock.command
    written = (tmp_path / "generated" / "v2" / lockfile.LOCK_NAME).read_text()
    assert str(tmp_path) not in written, "reasons cite the entry as `v2-allow.txt:LINE`"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    verified = cli("--config", config, "verify", "--generated", tmp_path / "generated" / "v2")
    assert ": OP001 " not in verified.stdout + verified.stderr, verified.stderr


def test_sync_and_check_of_another_directory_leave_the_configured_v2_tree_alone(
    cli: Cli, tmp_path: Path
) -> None:
    """`sync --generated DIR` writes DIR, not the workspace: the configured V2 tree is not
    touched (as `verify --generated DIR` does not verify it), nor checked by `check
    --generated DIR`."""
    config = _v2_workspace(tmp_path)
    assert cli("--config", config, "extract").exit_code == 0
    synced = cli("--config", config, "sync", "--generated", tmp_path / "elsewhere")
    assert synced.exit_code == 1, "the V1 fixture's conflicts"
    assert (tmp_path / "elsewhere" / lockfile.LOCK_NAME).is_file()
    assert not (tmp_path / "generated").exists()
    checked = cli("--config", config, "check", "--generated", tmp_path / "elsewhere", "--no-cache")
    assert "generated/v2" not in checked.stdout, "check of DIR is not the workspace's either"
    workspace = cli("--config", config, "check", "--no-cache")
    assert "generated/v2" in workspace.stdout, "the workspace's check misses its V2 tree"


def test_this_repository_gates_its_v2_tree() -> None:
    """`make sync` and `check` on this repository cover Model Runner V2: its configuration
    names the V2 source and the reviewed list, which exists."""
    from omni_port.sources.config import load

    root = Path(__file__).resolve().parent.parent
    config = load(root / "pyproject.toml")
    assert config.v2_source == config.source
    assert config.path(config.v2_allow) == root / "v2-allow.txt"
    assert (root / "v2-allow.txt").is_file()


def test_without_v2_configured_sync_writes_no_v2_tree(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.omni-port]\n"
        f'source = "{DATA / "omni"}"\n'
        f'upstream = "{DATA / "upstream/v1/model_runner_v1.py"}"\n'
    )
    cli("--config", config, "extract")
    cli("--config", config, "sync")
    assert not (tmp_path / "generated" / "v2").exists()
    lock = (tmp_path / "generated" / lockfile.LOCK_NAME).read_text()
    assert '"layout"' not in lock and '"sources"' not in lock


def test_v2_keys_of_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omni_port.sources.config import load

    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.omni-port]\n"
        'v2-source = "omni"\n'
        'v2-upstream = "vllm-ascend==0.26.0rc1"\n'
        'v2-vllm = "vllm==0.30.0 ../vllm"\n'
        'v2-allow = "allow.txt"\n'
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    loaded = load(config)
    assert (loaded.v2_source, loaded.v2_upstream) == ("../omni", "vllm-ascend==0.26.0rc1")
    assert loaded.v2_vllm == "vllm==0.30.0 ../../vllm"
    assert loaded.path(loaded.v2_allow) == tmp_path / "allow.txt"
    assert loaded.v2_generated == "generated/v2" and loaded.v2_vllm_base == ""


def test_v2_sync_json_to_stdout_is_only_json(cli: Cli, case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("v2-sync", *REPORT_ARGS, "--generated", out, "--json", "-")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["counts"]["spliced_methods"] == 2
    kinds = {(b["method"], b["kind"], b["status"]) for b in document["blocks"]}
    assert ("profile_run", "override", "conflict") in kinds
    assert ": OP301 " in result.stderr, "the findings go to stderr"
