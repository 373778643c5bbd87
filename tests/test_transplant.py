"""Transplant: GPU omni hunks the NPU runners lack, re-homed onto them and spliced by sync."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.extract import extractor
from omni_port.gpu import parity, transplant, vllm_delta
from omni_port.gpu.counterparts import Parity
from omni_port.model import Block, BlockKind, Code, Copy, PatchSet, Tree, Upstream
from omni_port.patches import lockfile
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import read_patch_set
from omni_port.pyast.parser import parse
from omni_port.sources.textio import read_source
from omni_port.sources.upstream import Spec, SpecKind
from tests.conftest import Cli
from tests.golden import DATA

HERE = DATA / "transplant"
OMNI = HERE / "omni"
VLLM = HERE / "vllm/gpu_model_runner.py"
ASCEND = HERE / "ascend.py"
NPU_WORKER = OMNI / "vllm_omni/platforms/npu/worker"
GPU_WORKER = OMNI / "vllm_omni/worker"
GPU_MODULES = ("gpu_model_runner.py", "gpu_ar_model_runner.py")
NPU_MODULES = ("npu_model_runner.py", "npu_ar_model_runner.py")
MISSING = {
    "gpu_model_runner.OmniGPUModelRunner.execute_model.edit-01",  # anchors transfer
    "gpu_model_runner.OmniGPUModelRunner.execute_model.edit-02",  # inside a vLLM-only `if`
    "gpu_ar_model_runner.GPUARModelRunner.sample_tokens.edit-01",  # NPU AR does not copy it
}
REFRESH = "self.stage_state.refresh(scheduler_output.stage_requests)"
BARRIER = "self.async_barrier.wait(scheduler_output.stage_requests)"
PLACED = "npu_model_runner.OmniNPUModelRunner.execute_model.gpu-edit-01"
CONFLICT = "npu_model_runner.OmniNPUModelRunner.execute_model.gpu-edit-02"
HOMELESS = "npu_ar_model_runner.NPUARModelRunner.sample_tokens.gpu-edit-01"


def _delta() -> vllm_delta.Delta:
    source = read_source(VLLM)
    bases = {"vllm==t": Upstream("vllm==t", source.sha256, parse(source.text, source.path))}
    sources = {name: read_source(GPU_WORKER / name) for name in GPU_MODULES}
    return vllm_delta.gpu_delta(sources, bases, "vllm==t")


def _npu() -> dict[str, Tree]:
    found = {name: read_source(NPU_WORKER / name) for name in NPU_MODULES}
    return {name: parse(s.text, s.path) for name, s in found.items()}


def _plan(rows: list[parity.HunkParity] | None = None) -> transplant.Plan:
    delta, npu = _delta(), _npu()
    return transplant.plan(delta, npu, rows if rows is not None else _rows(delta, npu))


def _rows(delta: vllm_delta.Delta, npu: dict[str, Tree]) -> list[parity.HunkParity]:
    return parity.hunk_parity(delta, npu)


def _main() -> PatchSet:
    """The NPU runners' own patch set, extracted against the synthetic vllm-ascend."""
    source = read_source(ASCEND)
    base = Upstream("ascend", source.sha256, parse(source.text, source.path))
    modules = [
        extractor.extract_module(read_source(NPU_WORKER / name), name, base).module
        for name in NPU_MODULES
    ]
    return PatchSet(tuple(modules))


def _extra(patches: PatchSet, label: str = "gt") -> transplant.Extra:
    return transplant.Extra(label, "0" * 64, patches)


def _ids(patches: PatchSet, module: str) -> list[str]:
    found = next(m for m in patches.modules if m.name == module)
    return [p.id for p in found.pieces]


# --- plan -------------------------------------------------------------------------------------


def test_only_the_gaps_of_copied_methods_are_transplanted() -> None:
    plan = _plan()
    assert {m.source_id for m in plan.moved} == MISSING
    # carried (model_kwargs, the **model_kwargs call) and inherited (sample_tokens) stay out
    assert {m.block.id for m in plan.moved} == {PLACED, CONFLICT, HOMELESS}
    assert all(m.status is Parity.MISSING for m in plan.moved)
    hosted = {m.block.id: m.hosted for m in plan.moved}
    assert hosted == {PLACED: True, CONFLICT: True, HOMELESS: False}
    (owned,) = plan.skipped
    assert (owned.module, owned.member, owned.line) == (
        "gpu_ar_model_runner.py",
        "_capture_talker_graphs",
        16,
    )
    assert "whole omni method" in owned.reason


def test_moved_blocks_are_rehomed_onto_the_npu_runner_classes() -> None:
    plan = _plan()
    assert [m.name for m in plan.patches.modules] == list(NPU_MODULES)
    assert _ids(plan.patches, "npu_model_runner.py") == [
        "npu_model_runner.OmniNPUModelRunner.execute_model",
        PLACED,
        CONFLICT,
    ]
    host = plan.patches.modules[0].pieces[0]
    assert isinstance(host, Copy)
    assert (host.owner, host.upstream_owner, host.upstream_name) == (
        "OmniNPUModelRunner",
        "NPUModelRunner",
        "execute_model",
    )
    block = next(m.block for m in plan.moved if m.block.id == PLACED)
    assert (block.owner, block.member, block.kind) == (
        "OmniNPUModelRunner",
        "execute_model",
        BlockKind.INSERTION,
    )
    assert block.code == REFRESH + "\n"
    assert block.title.startswith(
        "From GPU gpu_model_runner.py OmniGPUModelRunner.execute_model edit-01 (missing on NPU)"
    )
    assert block.origin.path.endswith("vllm_omni/worker/gpu_model_runner.py")


def test_a_partial_hunk_is_transplanted_and_flagged_for_review() -> None:
    delta, npu = _delta(), _npu()
    edit03 = "gpu_model_runner.OmniGPUModelRunner.execute_model.edit-03"
    rows = [replace(r, status=Parity.PARTIAL) if r.id == edit03 else r for r in _rows(delta, npu)]
    assert next(r for r in _rows(delta, npu) if r.id == edit03).status is Parity.PRESENT
    plan = transplant.plan(delta, npu, rows)
    moved = next(m for m in plan.moved if m.source_id == edit03)
    assert moved.status is Parity.PARTIAL
    assert "partly present on NPU: review" in moved.block.title


def test_allowed_gaps_are_not_transplanted() -> None:
    delta, npu = _delta(), _npu()
    entry = "gpu_model_runner.py:OmniGPUModelRunner.execute_model:edit-02  NPU has no async"
    allowed = parity.parse_allow_list(entry + "\n", "allow.txt")
    plan = transplant.plan(delta, npu, parity.hunk_parity(delta, npu, allowed))
    assert {m.source_id for m in plan.moved} == MISSING - {
        "gpu_model_runner.OmniGPUModelRunner.execute_model.edit-02"
    }


def test_a_gpu_module_without_its_npu_runner_is_listed_not_dropped() -> None:
    delta = _delta()
    npu = {"npu_model_runner.py": _npu()["npu_model_runner.py"]}
    plan = transplant.plan(delta, npu, parity.hunk_parity(delta, npu))
    assert all(m.module == "npu_model_runner.py" for m in plan.moved)
    unjudged = [s for s in plan.skipped if s.module == "gpu_ar_model_runner.py"]
    assert [s.id for s in unjudged] == [
        "gpu_ar_model_runner.GPUARModelRunner.sample_tokens.edit-01"
    ]
    assert "no NPU runner npu_ar_model_runner.py" in unjudged[0].reason


def test_the_transplant_patch_set_round_trips_through_its_files(tmp_path: Path) -> None:
    plan = _plan()
    for rel, text in render_patch_set(plan.patches, "omni-port test").items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert (
        tmp_path / "npu_model_runner/OmniNPUModelRunner.execute_model.gpu-edit-01.patch"
    ).is_file()
    assert read_patch_set(tmp_path) == plan.patches


# --- merge ------------------------------------------------------------------------------------


def test_merge_puts_blocks_after_the_copys_own_blocks() -> None:
    main = _main()
    merged = transplant.merge(main, [_extra(_plan().patches)])
    own = _ids(main, "npu_model_runner.py")
    ids = _ids(merged.patches, "npu_model_runner.py")
    at = ids.index("npu_model_runner.OmniNPUModelRunner.execute_model")
    tail = [i for i in own[at + 1 :] if ".execute_model." in i]
    assert tail, "the NPU copy has blocks of its own"
    assert ids[at + 1 :] == [*tail, PLACED, CONFLICT, *own[at + 1 + len(tail) :]]
    assert merged.joined == (PLACED, CONFLICT)
    assert merged.inputs == (("gt", "0" * 64),)


def test_a_block_whose_method_is_not_copied_is_a_conflict_not_a_drop() -> None:
    merged = transplant.merge(_main(), [_extra(_plan().patches)])
    (row,) = merged.orphans
    assert (row.block_id, row.status.value, row.module) == (
        HOMELESS,
        "conflict",
        "npu_ar_model_runner.py",
    )
    assert "no copy of NPUARModelRunner.sample_tokens" in row.reason
    (finding,) = merged.findings
    assert (finding.code, finding.line) == (Code.OP301, 1)
    assert finding.path == "gt/npu_ar_model_runner/NPUARModelRunner.sample_tokens.gpu-edit-01.patch"
    assert HOMELESS not in {p.id for m in merged.patches.modules for p in m.pieces}


def test_a_second_signature_edit_of_one_method_is_refused() -> None:
    main = _main()
    module = main.modules[0]
    copy = next(p for p in module.pieces if isinstance(p, Copy))
    block = next(p for p in module.pieces if isinstance(p, Block))
    signed = replace(block, id=f"{copy.id}.sig", kind=BlockKind.SIGNATURE)
    at = module.pieces.index(copy) + 1
    pieces = (*module.pieces[:at], signed, *module.pieces[at:])
    main = PatchSet((replace(module, pieces=pieces), *main.modules[1:]))
    extra = replace(signed, id=f"{copy.id}.gpu-sig")
    patches = PatchSet((replace(module, pieces=(copy, extra)),))
    merged = transplant.merge(main, [_extra(patches)])
    assert [r.block_id for r in merged.orphans] == [extra.id]
    assert "already edits the signature" in merged.orphans[0].reason


@pytest.mark.parametrize("broken", ["chunk", "duplicate", "orphan-block", "wrong-copy"])
def test_a_broken_transplant_input_is_bad_input(broken: str) -> None:
    main = _main()
    moved = _plan().patches
    module = moved.modules[0]
    copy, first, *rest = module.pieces
    pieces = {
        "chunk": main.modules[0].pieces,
        "duplicate": (copy, first, replace(rest[0], id=first.id)),
        "orphan-block": (first, *rest),
        "wrong-copy": (copy, replace(first, member="sample_tokens")),
    }[broken]
    with pytest.raises(BadInput) as error:
        transplant.merge(main, [_extra(PatchSet((replace(module, pieces=pieces),)))])
    (finding,) = error.value.findings
    assert finding.code is Code.OP201
    assert finding.path.startswith("gt/")


def test_two_inputs_with_the_same_block_clash() -> None:
    moved = _plan().patches
    with pytest.raises(BadInput) as error:
        transplant.merge(_main(), [_extra(moved, "a"), _extra(moved, "b")])
    assert error.value.findings[0].path.startswith("b/")


def test_the_lock_records_the_transplant_inputs() -> None:
    lock = lockfile.Lock("t", "u", "1", "2", {"a.py": "3"}, "cmd", (), (("gt", "4" * 64),))
    text = lockfile.render(lock)
    assert lockfile.parse(text, "lock").transplants == (("gt", "4" * 64),)
    plain = lockfile.render(replace(lock, transplants=()))
    assert "transplants" not in plain


# --- the commands -----------------------------------------------------------------------------

GPU_DELTA = ("gpu-delta", "transplant/omni", "--vllm", "transplant/vllm/gpu_model_runner.py")


def _gpu_delta(cli: Cli, target: Path, *more: object) -> tuple[int, str, str]:
    result = cli(*GPU_DELTA, "--parity", "transplant/omni", "--transplant", target, *more)
    return result.exit_code, result.stdout, result.stderr


def _synced(cli: Cli, tmp_path: Path, *more: object) -> tuple[Path, int, str, str]:
    """gpu-delta --transplant, extract of the NPU runners, then sync with the transplant."""
    _gpu_delta(cli, tmp_path / "gt")
    made = cli("extract", "transplant/omni", "--base", "transplant/ascend.py",
               "--patches", tmp_path / "npu")  # fmt: skip
    assert made.exit_code == 0, made.stderr
    out = tmp_path / "out"
    result = cli(
        "sync", "--patches", tmp_path / "npu", "--upstream", "transplant/ascend.py",
        "--generated", out, "--transplant", tmp_path / "gt", *more,
    )  # fmt: skip
    return out, result.exit_code, result.stdout, result.stderr


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}  # fmt: skip


def test_gpu_delta_writes_the_transplant_and_lists_what_it_cannot(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    target = tmp_path / "gt"
    code, stdout, stderr = _gpu_delta(cli, target, "--json", tmp_path / "r.json")
    assert code == 1, stderr  # the parity gaps are findings
    assert "transplant: 3 hunks re-homed onto the NPU runners" in stdout
    assert re.search(r"not transplantable: .*gpu_ar_model_runner.py:16: "
                     r"GPUARModelRunner._capture_talker_graphs \(missing\)", stdout)  # fmt: skip
    assert "(the NPU class does not override sample_tokens)" in stdout
    written = read_patch_set(target)
    expected = _plan().patches
    assert [[p.id for p in m.pieces] for m in written.modules] == [
        [p.id for p in m.pieces] for m in expected.modules
    ]
    assert [b.code for m in written.modules for b in m.pieces if isinstance(b, Block)] == [
        b.code for m in expected.modules for b in m.pieces if isinstance(b, Block)
    ]
    document = json.loads((tmp_path / "r.json").read_text())
    assert {b["id"] for b in document["transplant"]["blocks"]} == {PLACED, CONFLICT, HOMELESS}
    assert [s["method"] for s in document["transplant"]["not_transplantable"]] == [
        "_capture_talker_graphs"
    ]
    assert (document["counts"]["transplanted"], document["counts"]["not_transplantable"]) == (3, 1)
    before = _tree(target)
    again = cli.loud(*GPU_DELTA, "--parity", "transplant/omni", "--transplant", target, "--check")
    assert "would" not in again.stderr
    assert _tree(target) == before


def test_gpu_delta_check_and_diff_write_nothing(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "gt"
    code, stdout, stderr = _gpu_delta(cli, target, "--check", "--diff")
    assert code == 1, stderr
    assert not target.exists()
    assert "+++ b/npu_model_runner/OmniNPUModelRunner.execute_model.gpu-edit-01.patch" in stdout


def test_sync_places_a_missing_hunk_where_its_anchor_says(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    out, code, _, stderr = _synced(cli, tmp_path, "--json", tmp_path / "s.json")
    assert code == 1, stderr
    lines = (out / "npu_model_runner.py").read_text().splitlines()
    at = lines.index("        self._update_states(scheduler_output)")
    assert lines[at + 1] == "        " + REFRESH
    assert lines[at + 2] == "        if not scheduler_output.total_num_scheduled_tokens:"
    lock = json.loads((out / lockfile.LOCK_NAME).read_text())
    row = next(r for r in lock["placements"] if r["id"] == PLACED)
    assert (row["status"], row["lines"]) == ("placed", [at + 2, at + 2])
    # the NPU runner's own blocks are all still placed
    own = [r for r in lock["placements"] if ".gpu-" not in r["id"]]
    assert own and all(r["status"] == "placed" for r in own)


def test_sync_an_anchor_that_does_not_transfer_is_a_visible_conflict(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    out, code, stdout, stderr = _synced(cli, tmp_path)
    assert code == 1, stderr
    text = (out / "npu_model_runner.py").read_text()
    parse(text, "generated")
    assert f"# >>>>>>> omni-port conflict: {CONFLICT} (From GPU" in text
    assert f"# | {BARRIER}" in text
    assert not re.search(rf"^\s+{re.escape(BARRIER)}$", text, re.M)
    finding = next(line for line in stdout.splitlines() if CONFLICT in line)
    # At the conflict in the generated file, the line an editor opens; not upstream's.
    line = next(n for n, t in enumerate(text.splitlines(), 1) if f"conflict: {CONFLICT}" in t)
    assert finding.startswith(f"{out / 'npu_model_runner.py'}:{line}:1: OP301 "), finding


def test_a_transplanted_conflict_is_resolved_in_its_transplant_dir(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    out, _, _, _ = _synced(cli, tmp_path)
    upstream = ("--upstream", "transplant/ascend.py")
    answer = cli("resolve", CONFLICT, "--patches", tmp_path / "gt", *upstream, "--at", "11")
    assert answer.exit_code == 0, answer.stderr
    kept = cli.loud(*GPU_DELTA, "--parity", "transplant/omni", "--transplant", tmp_path / "gt",
                    "--check")  # fmt: skip
    assert "would" not in kept.stderr, "gpu-delta keeps the recorded resolution"
    again = cli("sync", "--patches", tmp_path / "npu", *upstream, "--generated", out,
                "--transplant", tmp_path / "gt")  # fmt: skip
    assert CONFLICT not in again.stdout
    lines = (out / "npu_model_runner.py").read_text().splitlines()
    at = lines.index("        self._update_states(scheduler_output)")
    assert lines[at + 1 : at + 3] == ["        " + REFRESH, "        " + BARRIER]


def test_sync_reports_a_block_without_a_copy(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    _, code, stdout, stderr = _synced(cli, tmp_path, "--json", tmp_path / "s.json")
    assert code == 1, stderr
    finding = next(line for line in stdout.splitlines() if HOMELESS in line)
    assert finding.startswith(
        f"{tmp_path}/gt/npu_ar_model_runner/NPUARModelRunner.sample_tokens.gpu-edit-01.patch:1:1:"
        " OP301 "
    )
    assert "no copy of NPUARModelRunner.sample_tokens" in finding
    report = json.loads((tmp_path / "s.json").read_text())
    rows = {b["id"]: b for b in report["blocks"]}
    assert rows[HOMELESS]["status"] == "conflict"
    assert rows[HOMELESS]["transplanted"] is True
    assert rows[PLACED]["transplanted"] is True
    assert not any(b["transplanted"] for b in report["blocks"] if ".gpu-" not in b["id"])
    counts = report["counts"]
    keys = ("transplanted", "transplant_placed", "transplant_conflict", "transplant_without_copy")
    assert [counts[k] for k in keys] == [3, 1, 1, 1]
    assert report["transplants"][0]["input"] == str(tmp_path / "gt")


def test_sync_header_and_lock_name_the_transplant(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    out, code, _, stderr = _synced(cli, tmp_path)
    assert code == 1, stderr
    lock = lockfile.parse((out / lockfile.LOCK_NAME).read_text(), "lock")
    ((label, digest),) = lock.transplants
    assert label == str(tmp_path / "gt")
    head = (out / "npu_model_runner.py").read_text().splitlines()[:4]
    assert head[2] == f"# Transplanted blocks: {label} (sha256 {digest[:16]})."
    assert head[3].startswith("# Regenerate: omni-port sync --patches ")
    assert head[3].endswith(f" --transplant {label}")
    assert lock.command == head[3].removeprefix("# Regenerate: ")
    files = render_patch_set(read_patch_set(tmp_path / "gt"), "omni-port 0.1.0")
    assert digest == lockfile.patches_digest(files)


def test_check_regenerates_with_the_locked_transplant(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    """check compares the outputs with a sync that includes the lock's transplant inputs."""
    out, _, _, _ = _synced(cli, tmp_path)
    args = ("check", "transplant/omni",
            "--patches", tmp_path / "npu", "--generated", out, "--format", "json")  # fmt: skip
    kinds = [json.loads(line)["kind"] for line in cli(*args).stdout.splitlines()]
    assert "stale-generated" not in kinds
    # An edited transplant input makes the outputs stale; the cache must not hide it.
    piece = tmp_path / "gt" / "npu_model_runner" / (PLACED.split(".", 1)[1] + ".patch")
    piece.write_text(piece.read_text() + "self.edited_by_hand = True\n")
    kinds = [json.loads(line)["kind"] for line in cli(*args).stdout.splitlines()]
    assert "stale-generated" in kinds


def test_sync_without_transplant_is_unchanged(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    out, _, _, _ = _synced(cli, tmp_path)
    plain = tmp_path / "plain"
    result = cli("sync", "--patches", tmp_path / "npu", "--upstream", "transplant/ascend.py",
                 "--generated", plain)  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    text = (plain / "npu_model_runner.py").read_text()
    assert "Transplanted" not in text and REFRESH not in text
    assert "transplants" not in (plain / lockfile.LOCK_NAME).read_text()
    assert (out / "npu_model_runner.py").read_text() != text


def test_transplant_runs_are_byte_identical(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    out, _, _, _ = _synced(cli, tmp_path)
    first = {**_tree(out), **{f"gt/{k}": v for k, v in _tree(tmp_path / "gt").items()}}
    shutil.rmtree(out)
    shutil.rmtree(tmp_path / "gt")
    out, _, _, _ = _synced(cli, tmp_path)
    second = {**_tree(out), **{f"gt/{k}": v for k, v in _tree(tmp_path / "gt").items()}}
    assert first == second


def test_transplant_is_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from omni_port.cli import main\n"
        "omni, vllm, ascend = sys.argv[1:]\n"
        "for args in (\n"
        "    ['gpu-delta', omni, '--vllm', vllm, '--parity', omni, '--transplant', 't'],\n"
        "    ['extract', omni, '--base', ascend, '--patches', 'p'],\n"
        "    ['sync', '--patches', 'p', '--upstream', ascend, '--generated', 'g',\n"
        "     '--transplant', 't'],\n"
        "):\n"
        "    try:\n"
        "        main(['-q', *args], standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass  # the parity gaps and conflicts exit 1\n"
    )
    outputs = []
    for seed in ("0", "4242"):
        work = tmp_path / seed
        work.mkdir()
        (work / "pyproject.toml").write_text("[tool.omni-port]\n")
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        subprocess.run(
            [sys.executable, "-c", script, str(OMNI), str(VLLM), str(ASCEND)],
            cwd=work, env=env, check=True, capture_output=True,
        )  # fmt: skip
        outputs.append({**_tree(work / "g"), **{f"t/{k}": v for k, v in _tree(work / "t").items()}})
    assert "npu_model_runner.py" in outputs[0]
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("transplant_dir", "code", "line"),
    [
        pytest.param("transplant/nowhere", "OP204", 0, id="missing-dir"),
        pytest.param("transplant/broken_index", "OP202", 11, id="missing-piece"),
        pytest.param("transplant/broken_piece", "OP201", 4, id="malformed-piece"),
        pytest.param("NPU", "OP201", 1, id="ordinary-patch-set"),
    ],
)
def test_sync_bad_transplant_input_exits_2_and_writes_nothing(
    cli: Cli, in_data: Path, tmp_path: Path, transplant_dir: str, code: str, line: int
) -> None:
    made = cli("extract", "transplant/omni", "--base", "transplant/ascend.py",
               "--patches", tmp_path / "npu")  # fmt: skip
    assert made.exit_code == 0, made.stderr
    given = tmp_path / "npu" if transplant_dir == "NPU" else transplant_dir
    out = tmp_path / "out"
    result = cli("sync", "--patches", tmp_path / "npu", "--upstream", "transplant/ascend.py",
                 "--generated", out, "--transplant", given,
                 "--json", tmp_path / "s.json")  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    (message,) = result.stderr.splitlines()
    assert re.match(rf"^\S+:{line}:1: {code} ", message), message
    assert result.stdout == ""
    assert not out.exists() and not (tmp_path / "s.json").exists()


def test_gpu_delta_transplant_needs_parity(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    result = cli(*GPU_DELTA, "--transplant", tmp_path / "gt")
    assert result.exit_code == 2
    assert re.match(rf"^{re.escape(str(tmp_path / 'gt'))}:0:1: OP005 ", result.stderr)
    assert result.stdout == ""
    assert not (tmp_path / "gt").exists()
    same = cli(*GPU_DELTA, "--parity", "transplant/omni", "--transplant", tmp_path / "gt",
               "--patches", tmp_path / "gt")  # fmt: skip
    assert same.exit_code == 2 and " OP005 " in same.stderr
    assert not (tmp_path / "gt").exists()


# --- real data ----------------------------------------------------------------------------------


@pytest.mark.real
def test_real_transplant_of_vllm_omni_0_26_gpu_hunks(
    cli: Cli, cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vllm-omni 0.26.0's GPU gaps onto its NPU runners, synced onto vllm-ascend 0.26.0rc1."""
    for version in ("0.26.0", "0.25.0", "0.24.0"):
        vllm_delta.locate_vllm(Spec(SpecKind.PYPI, "vllm", version), cache_dir)
    common = ("--cache-dir", cache_dir)
    delta = cli(*common, "gpu-delta", "vllm-omni==0.26.0", "--vllm", "0.26.0", "--vllm", "0.25.0",
                "--vllm", "0.24.0", "--parity", "vllm-omni==0.26.0", "--transplant",
                tmp_path / "gt", "--json", tmp_path / "gd.json")  # fmt: skip
    assert delta.exit_code == 1, delta.stderr
    plan = json.loads((tmp_path / "gd.json").read_text())
    statuses = {(r["id"]): r["status"] for r in plan["parity"] if r["side"] == "gpu"}
    moved = plan["transplant"]["blocks"]
    assert moved and all(statuses[m["from"]] in ("missing", "partial") for m in moved)
    made = cli(*common, "extract", "vllm-omni==0.26.0", "--base", "vllm-ascend==0.26.0rc1",
               "--patches", tmp_path / "npu")  # fmt: skip
    assert made.exit_code == 0, made.stderr
    synced = cli(*common, "sync", "--patches", tmp_path / "npu", "--upstream",
                 "vllm-ascend==0.26.0rc1", "--generated", tmp_path / "out", "--transplant",
                 tmp_path / "gt", "--json", tmp_path / "s.json")  # fmt: skip
    assert synced.exit_code == 1, synced.stderr
    counts = json.loads((tmp_path / "s.json").read_text())["counts"]
    assert counts["transplanted"] == len(moved)
    assert counts["transplant_placed"] > 0
    assert (
        counts["transplant_placed"]
        + counts["transplant_conflict"]
        + counts["transplant_without_copy"]
        == counts["transplanted"]
    )
    for name in ("npu_model_runner.py", "npu_ar_model_runner.py", "npu_generation_model_runner.py"):
        parse((tmp_path / "out" / name).read_text(), name)
    with capsys.disabled():
        print(
            f"\ntransplant 0.26.0: {counts['transplanted']} hunks, "
            f"{counts['transplant_placed']} placed, {counts['transplant_conflict']} conflicts, "
            f"{counts['transplant_without_copy']} without a copy; "
            f"{len(plan['transplant']['not_transplantable'])} not transplantable"
        )
