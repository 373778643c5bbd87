"""GPU delta: per-method vLLM bases, omni hunks, hunk-level GPU/NPU parity, transplant."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.gpu import parity, vllm_delta
from omni_port.gpu.counterparts import Parity, index_classes, mro, resolve
from omni_port.gpu.evidence import ItemKind
from omni_port.model import Block, Code, Severity, Tree, Upstream
from omni_port.patches.store import read_patch_set
from omni_port.pyast.parser import parse
from omni_port.sources.textio import read_source
from omni_port.sources.upstream import Spec, SpecKind
from tests.conftest import Cli
from tests.golden import DATA

GPU = DATA / "gpu"
OMNI = GPU / "omni"
GPU_RUNNER = OMNI / "vllm_omni/worker/gpu_model_runner.py"
NPU_RUNNER = OMNI / "vllm_omni/platforms/npu/worker/npu_model_runner.py"
OLD, NEW = "vllm==old", "vllm==new"


def _base(label: str, folder: str) -> Upstream:
    source = read_source(GPU / folder / "gpu_model_runner.py")
    return Upstream(label, source.sha256, parse(source.text, source.path))


def _delta(*labels: str) -> vllm_delta.Delta:
    folders = {NEW: "vllm_new", OLD: "vllm_old"}
    bases = {label: _base(label, folders[label]) for label in labels}
    return vllm_delta.gpu_delta({"gpu_model_runner.py": read_source(GPU_RUNNER)}, bases, labels[0])


def _npu() -> dict[str, Tree]:
    source = read_source(NPU_RUNNER)
    return {"npu_model_runner.py": parse(source.text, source.path)}


# --- per-method bases and the delta ---------------------------------------------------------


def test_each_method_gets_the_release_it_was_copied_from() -> None:
    delta = _delta(NEW, OLD)
    bases = {m.base.member: m.base.base for m in delta.methods}
    assert bases == {"execute_model": OLD, "sample_tokens": NEW}
    execute = next(m for m in delta.methods if m.base.member == "execute_model")
    assert [s.label for s in execute.base.scores] == [NEW, OLD]
    assert execute.base.best.containment > execute.base.scores[0].containment


def _replaced(delta: vllm_delta.Delta) -> list[str]:
    return [key for m in delta.methods for b in m.hunks for key in b.anchor.replaced]


def test_vllm_drift_is_no_omni_hunk_with_per_method_bases() -> None:
    drift = ["self._record_batch_stats(scheduler_output)", "self.execute_model_state = ("]
    target_only = _replaced(_delta(NEW))
    assert [k for k in target_only if k.startswith(tuple(drift))] == [
        "self._record_batch_stats(scheduler_output)",
        "self.execute_model_state = (logits, inputs, scheduler_output)",
    ]
    assert not [k for k in _replaced(_delta(NEW, OLD)) if k.startswith(tuple(drift))]


def test_the_delta_is_an_ordinary_patch_set_with_each_copy_from_its_base() -> None:
    delta = _delta(NEW, OLD)
    (module,) = delta.patches.modules
    assert module.base == NEW
    blocks = [p for p in module.pieces if isinstance(p, Block)]
    assert [b.id.rsplit(".", 2)[-2:] for b in blocks] == [
        ["execute_model", "edit-01"],
        ["execute_model", "edit-02"],
        ["execute_model", "edit-03"],
        ["execute_model", "edit-04"],
        ["sample_tokens", "edit-01"],
    ]
    assert all(not b.marked for b in blocks)


def test_target_and_neighbours() -> None:
    assert vllm_delta.target_vllm("0.26.0") == "0.26.0"
    assert vllm_delta.target_vllm("0.22.1rc2") == "0.22.0"
    assert vllm_delta.neighbours("0.26.0") == ["0.24.0", "0.25.0", "0.26.0", "0.27.0"]
    assert vllm_delta.omni_version_of(OMNI) == "0.26.0"
    assert vllm_delta.omni_version_of(GPU) == ""


# --- hunk-level parity ------------------------------------------------------------------------


def _rows(allowed: tuple[parity.AllowEntry, ...] = ()) -> dict[str, parity.HunkParity]:
    rows = parity.hunk_parity(_delta(NEW, OLD), _npu(), allowed)
    return {row.id.split(".", 2)[-1]: row for row in rows}


def test_parity_of_each_kind_of_hunk() -> None:
    rows = _rows()
    status = {key: (row.status.value, row.present_as or "") for key, row in rows.items()}
    assert status == {
        # GPU-only (CUDA graph capture): reported
        "execute_model.edit-01": ("missing", ""),
        # shared, unmarked on the NPU side
        "execute_model.edit-02": ("present", "unmarked"),
        # the NPU call lacks the sampling argument the GPU passes
        "execute_model.edit-03": ("missing", ""),
        # shared, in an NPU marked block
        "execute_model.edit-04": ("present", "marked"),
        # the NPU runner inherits these from the GPU runner
        "sample_tokens.edit-01": ("inherited", "inherited"),
        "_build_model_kwargs_extra": ("inherited", "inherited"),
        # NPU-only block, and the NPU block the GPU shares
        "execute_model.block-01": ("missing", ""),
        "execute_model.block-02": ("present", "unmarked"),
    }
    (added,) = rows["execute_model.edit-03"].missing
    assert added.kind is ItemKind.ADDED
    assert "sampling_metadata=self.input_batch.sampling_metadata" in added.text


def test_parity_findings_name_the_lines_and_the_allow_list_hides_gpu_only_gaps() -> None:
    findings = parity.parity_findings(list(_rows().values()))
    where = sorted((Path(f.path).name, f.line, f.code) for f in findings)
    assert where == [
        ("gpu_model_runner.py", 12, Code.OP408),
        ("gpu_model_runner.py", 19, Code.OP408),
        ("npu_model_runner.py", 23, Code.OP408),
    ]
    source = read_source(GPU / "allow.txt")
    allowed = parity.parse_allow_list(source.text, source.path)
    rows = _rows(allowed)
    assert rows["execute_model.edit-01"].status is Parity.ALLOWED
    findings = parity.parity_findings(list(rows.values()), allowed)
    assert sorted(f.line for f in findings if f.severity is Severity.ERROR) == [19, 23]


@pytest.mark.parametrize(
    ("line", "selected"),
    [
        pytest.param("execute_model  r", ["edit-01", "edit-02", "edit-03", "edit-04"], id="all"),
        pytest.param("execute_model:edit-03  r", ["edit-03"], id="local-id"),
        pytest.param(
            "execute_model:gpu_model_runner.OmniGPUModelRunner.execute_model.edit-02  r",
            ["edit-02"],
            id="full-id",
        ),
        pytest.param("execute_model:torch.cuda.synchronize(  r", ["edit-01"], id="line-prefix"),
        pytest.param("execute_model:if self.use_cuda_graph_capture:\tr", ["edit-01"], id="key"),
    ],
)
def test_allow_list_selectors(line: str, selected: list[str]) -> None:
    entries = parity.parse_allow_list(f"gpu_model_runner.py:OmniGPUModelRunner.{line}\n", "a")
    rows = parity.hunk_parity(_delta(NEW, OLD), _npu(), entries)
    allowed = [r.id.rsplit(".", 1)[-1] for r in rows if r.status is Parity.ALLOWED]
    missing = {"edit-01", "edit-03"}
    assert allowed == [s for s in selected if s in missing]


def test_an_allow_entry_matching_nothing_is_a_note() -> None:
    entries = parity.parse_allow_list("gpu_model_runner.py:Nope.execute_model  stale\n", "a.txt")
    rows = parity.hunk_parity(_delta(NEW, OLD), _npu(), entries)
    notes = [f for f in parity.parity_findings(rows, entries) if f.severity is Severity.NOTE]
    assert [(n.path, n.line, n.code) for n in notes] == [("a.txt", 1, Code.OP408)]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("gpu_model_runner.py:OmniGPUModelRunner.execute_model\n", id="no-reason"),
        pytest.param("gpu_model_runner.py:execute_model  reason\n", id="no-class"),
        pytest.param("OmniGPUModelRunner.execute_model reason\n", id="one-space"),
    ],
)
def test_malformed_allow_list(text: str) -> None:
    with pytest.raises(BadInput) as error:
        parity.parse_allow_list("# reviewed gaps\n" + text, "allow.txt")
    assert [(f.code, f.line) for f in error.value.findings] == [(Code.OP005, 2)]


def test_method_resolution_follows_delegation() -> None:
    code = (
        "class A:\n    def f(self):\n        x = 1\n"
        "class B(A):\n    def f(self):\n        y = 2\n        return super().f()\n"
        "class C(B):\n    def f(self):\n        z = 3\n        return A.f(self)\n"
    )
    index = index_classes({"m.py": parse(code, "m.py")}, "gpu")
    assert mro("C", index) == ["C", "B", "A"]
    assert [cls.name for cls, _ in resolve("C", "f", index)] == ["C", "A"]
    assert [cls.name for cls, _ in resolve("B", "f", index)] == ["B", "A"]


# --- the command ------------------------------------------------------------------------------

VLLM = (
    "--vllm",
    GPU / "vllm_new/gpu_model_runner.py",
    "--vllm",
    GPU / "vllm_old/gpu_model_runner.py",
)


def test_cli_without_parity_is_clean(cli: Cli) -> None:
    result = cli("gpu-delta", OMNI, *VLLM)
    assert result.exit_code == 0, result.stderr
    assert "OmniGPUModelRunner.execute_model  base" in result.stdout
    assert "edit-03 replacement" in result.stdout


def test_cli_parity_gaps_exit_1(cli: Cli, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = cli("gpu-delta", OMNI, *VLLM, "--parity", OMNI, "--json", report)
    assert result.exit_code == 1, result.stderr
    assert result.stdout.count(" OP408 ") == 3
    import json

    document = json.loads(report.read_text())
    assert {m["method"]: m["base"] for m in document["methods"]} == {
        "execute_model": str(GPU / "vllm_old/gpu_model_runner.py"),
        "sample_tokens": str(GPU / "vllm_new/gpu_model_runner.py"),
    }
    assert document["counts"]["hunks"] == 5
    assert document["counts"]["gpu_missing"] == 2
    assert {r["status"] for r in document["parity"]} >= {"present", "inherited", "missing"}


def test_cli_with_every_gap_allowed_exits_0(cli: Cli) -> None:
    allow = GPU / "allow_all.txt"
    result = cli("gpu-delta", OMNI, *VLLM, "--parity", OMNI, "--parity-allow", allow)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert " OP408 " not in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("gpu-delta", GPU / "nowhere", *VLLM), id="missing-source"),
        pytest.param(("gpu-delta", GPU_RUNNER), id="unknown-target"),
        pytest.param(("gpu-delta", OMNI, "--vllm", GPU / "nowhere.py"), id="missing-vllm"),
        pytest.param(
            (
                "gpu-delta",
                OMNI,
                *VLLM,
                "--parity",
                OMNI,
                "--parity-allow",
                GPU / "vllm_old/gpu_model_runner.py",
            ),
            id="bad-allow-list",
        ),
    ],
)
def test_cli_bad_input_exits_2(cli: Cli, args: tuple[object, ...]) -> None:
    result = cli(*map(str, args))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert ": OP00" in result.stderr


def test_patches_feed_sync_onto_the_npu_upstream(cli: Cli, tmp_path: Path) -> None:
    patches = tmp_path / "patches"
    result = cli("gpu-delta", OMNI, *VLLM, "--patches", patches)
    assert result.exit_code == 0, result.stderr
    assert len(read_patch_set(patches).modules) == 1
    again = cli("gpu-delta", OMNI, *VLLM, "--patches", patches, "--check")
    assert again.exit_code == 0, again.stderr
    out = tmp_path / "out"
    synced = cli(
        "sync", "--patches", patches, "--upstream", DATA / "transplant" / "ascend.py",
        "--upstream-class", "NPUModelRunner", "--generated", out,
    )  # fmt: skip
    assert synced.exit_code in (0, 1), synced.stderr
    text = (out / "gpu_model_runner.py").read_text()
    parse(text, "generated")
    assert "self._omni_postprocess(sampler_output)" in text
    assert "set_ascend_forward_context" in text


def test_check_parity_for_the_check_command() -> None:
    bases = {NEW: _base(NEW, "vllm_new"), OLD: _base(OLD, "vllm_old")}
    sources = {"gpu_model_runner.py": read_source(GPU_RUNNER)}
    findings = parity.check_parity(sources, _npu(), bases, NEW)
    assert sorted((Path(f.path).name, f.line) for f in findings) == [
        ("gpu_model_runner.py", 12),
        ("gpu_model_runner.py", 19),
        ("npu_model_runner.py", 23),
    ]


# --- real data ----------------------------------------------------------------------------------


@pytest.mark.real
def test_real_gpu_delta_and_the_sampling_arguments_gap(cache_dir: Path) -> None:
    """vllm-omni 0.26.0 against vLLM 0.26.0 and two earlier releases (one member each)."""
    from omni_port.sources.upstream import OMNI_GPU_RUNNERS, OMNI_RUNNERS, locate

    omni = Spec(SpecKind.PYPI, "vllm-omni", "0.26.0")
    sources = {Path(m).name: locate(omni, m, cache_dir).source for m in OMNI_GPU_RUNNERS}
    npu = {
        Path(m).name: parse(s.text, s.path)
        for m in OMNI_RUNNERS
        for s in [locate(omni, m, cache_dir).source]
    }
    bases = {}
    for version in ("0.26.0", "0.25.0", "0.24.0"):
        located = vllm_delta.locate_vllm(Spec(SpecKind.PYPI, "vllm", version), cache_dir)
        source = located.source
        bases[located.label] = Upstream(
            located.label, source.sha256, parse(source.text, source.path)
        )
    assert not (cache_dir / "wheels" / "vllm-0.26.0").exists()
    delta = vllm_delta.gpu_delta(sources, bases, "vllm==0.26.0")
    chosen = {(m.base.module, m.base.member): m.base.base for m in delta.methods}
    assert ("gpu_ar_model_runner.py", "execute_model") in chosen
    assert set(chosen.values()) - {"vllm==0.26.0"}, "some copies lag their target release"
    assert sum(len(m.hunks) for m in delta.methods) > 30
    rows = parity.hunk_parity(delta, npu)
    findings = parity.parity_findings(rows)
    gap = [
        f
        for f in findings
        if f.path.endswith("gpu_ar_model_runner.py")
        and "GPUARModelRunner.execute_model" in f.message
        and "sampling_metadata=self.input_batch.sampling_metadata" in f.detail
    ]
    assert gap, "the NPU AR runner does not pass the GPU's sampling arguments to _model_forward"
    assert any(r.status is Parity.PRESENT and r.present_as == "marked" for r in rows)
    assert any(r.status is Parity.INHERITED for r in rows)
    # The repository's reviewed allow-list: every entry hides a gap, none is stale.
    allow_path = Path(__file__).resolve().parent.parent / "parity-allow.txt"
    allowed = parity.parse_allow_list(allow_path.read_text(), str(allow_path))
    allowed_rows = parity.hunk_parity(delta, npu, allowed)
    hidden = {row.allow for row in allowed_rows if row.allow is not None}
    assert hidden == set(allowed), "an allow-list entry matches no gap"
    assert len(parity.parity_findings(allowed_rows)) < len(findings)


def test_check_reports_hunk_level_parity(cli: Cli, tmp_path: Path) -> None:
    """`check --gpu` is the CI form of the parity report; the allow-list clears it."""
    common = (
        "--config", DATA / "pyproject.toml",  # no base or upstream to download
        "check", OMNI, "--gpu", OMNI, *VLLM, "--patches", tmp_path / "none",
        "--generated", tmp_path / "none", "--no-cache", "--format", "json",
    )  # fmt: skip
    result = cli(*common)
    assert result.exit_code == 1, result.stderr
    import json

    found = [json.loads(line) for line in result.stdout.splitlines()]
    # Nothing extracted or generated here: the gate says so (and fails) beside the parity.
    assert sorted((f["kind"], Path(f["path"]).name, f["line"]) for f in found) == [
        ("nothing-to-check", "none", 0),
        ("nothing-to-check", "none", 0),
        ("parity", "gpu_model_runner.py", 12),
        ("parity", "gpu_model_runner.py", 19),
        ("parity", "npu_model_runner.py", 23),
    ]
    allowed = cli(*common, "--parity-allow", GPU / "allow_all.txt")
    kinds = [json.loads(line)["kind"] for line in allowed.stdout.splitlines()]
    assert kinds == ["nothing-to-check", "nothing-to-check"], allowed.stdout + allowed.stderr


def test_check_gpu_without_a_target_is_bad_input(cli: Cli, tmp_path: Path) -> None:
    result = cli("check", OMNI, "--gpu", GPU_RUNNER, "--patches", tmp_path / "none")
    assert result.exit_code == 2
    assert "pass --vllm vllm==X" in result.stderr
