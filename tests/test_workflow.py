"""A maintainer's workflow on a synthetic upgrade (tests/data/upgrade: v1 -> v2 -> v3).

Gates that fail on what is unresolved and pass once it is resolved, an upgrade target that
sticks, adoptions that survive re-extraction, outputs whose bytes do not depend on the
working directory, and reports a program can read.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from omni_port import report, runtime
from omni_port.api import resolution
from omni_port.model import CONFLICT_OPEN, Code, Finding, Resolution
from omni_port.patches import lockfile
from tests.conftest import Cli
from tests.golden import DATA

ROOT = Path(__file__).resolve().parent.parent
BLOCK = "omni.R.sample.block-01"
EDIT = "omni.R.forward.edit-01"
CONFIG = """\
[tool.omni-port]
source = "omni.py"
base = "v1.py"
upstream = "{upstream}"
patches = "p"
generated = "g"
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("v1.py", "v2.py", "v3.py", "omni.py"):
        shutil.copy(DATA / "upgrade" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(CONFIG.format(upstream="v2.py"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _conflict_line(path: Path) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if CONFLICT_OPEN in line)


def _codes(output: str) -> list[tuple[str, str]]:
    """(``path:line``, code) of every diagnostic line."""
    found = []
    for line in output.splitlines():
        where, _, rest = line.partition(": ")
        if rest[:2] == "OP" and where.count(":") == 2:
            found.append((where.rsplit(":", 1)[0], rest.split()[0]))
    return found


# --- gates fail on what is unresolved (points 1, 8, 9) ---------------------------------------


def test_a_conflict_left_in_the_output_fails_verify_and_check_until_resolved(
    cli: Cli, work: Path
) -> None:
    assert cli("extract").exit_code == 0
    synced = cli("sync")
    assert synced.exit_code == 1
    at = f"g/omni.py:{_conflict_line(work / 'g' / 'omni.py')}"
    # Sync's conflict names the generated file's line, a place an editor can open.
    assert (at, "OP301") in _codes(synced.stdout), synced.stdout
    verified = cli("verify")
    assert verified.exit_code == 1
    assert (at, "OP310") in _codes(verified.stdout), verified.stdout
    checked = cli("check", "--no-cache")
    assert checked.exit_code == 1
    assert (at, "OP310") in _codes(checked.stdout), checked.stdout

    assert cli("resolve", BLOCK, "--at", "#2").exit_code == 0
    assert cli("sync").exit_code == 0
    assert cli("verify").exit_code == 0
    checked = cli.loud("check", "--no-cache")
    assert checked.exit_code == 0, checked.stdout
    # The implicit edit is still listed, as information; it fails nothing.
    assert ("omni.py:16", "OP407") in _codes(checked.stdout)
    assert "check: no problems;" in checked.stderr


def test_a_conflict_no_place_takes_is_never_sent_to_a_candidate(cli: Cli, work: Path) -> None:
    """Upstream's `sample` vanished: its copy and block are a conflict no candidate place
    takes, and no route of `resolve` or `continue` places. Verify, check and the runtime
    switch say what does, never `resolve --at '#K'` (or `--at LINE`)."""
    upstream = (work / "v1.py").read_text()
    start, end = upstream.index("    def sample"), upstream.index("    def forward")
    (work / "v4.py").write_text(upstream[:start] + upstream[end:])
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v4.py"))
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    verified = cli.loud("verify")
    checked = cli("check", "--no-cache")
    assert (verified.exit_code, checked.exit_code) == (1, 1)
    for output in (verified.stdout, checked.stdout):
        [conflict] = [line for line in output.splitlines() if " OP310 " in line]
        assert "--at" not in conflict and "extract" in conflict, conflict
    assert "--at" not in verified.stderr and "omni-port continue" not in verified.stderr
    [reason] = [r for r in runtime.unresolved(work / "g") if "conflicts" in r]
    assert "--at" not in reason and "vanished" in reason


def test_check_is_green_on_a_clean_workspace_with_implicit_edits(cli: Cli, work: Path) -> None:
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    result = cli("check", "--no-cache", "--json", "-")
    assert result.exit_code == 0, result.stderr
    notes = json.loads(result.stdout)["findings"]
    assert ("OP407", "implicit-edit", "note") in [
        (f["code"], f["kind"], f["severity"]) for f in notes
    ]
    assert {f["severity"] for f in notes} == {"note"}


def _make(work: Path, target: str) -> subprocess.CompletedProcess[str]:
    """The repository's Makefile target, run in ``work`` with this environment's omni-port."""
    stamp = work / "installed-stamp"
    stamp.touch()  # newer than pyproject.toml: make installs nothing
    command = ["make", "-s", "-f", str(ROOT / "Makefile"), target]
    overrides = [f"BIN={Path(sys.executable).parent}", f"STAMP={stamp}"]
    return subprocess.run([*command, *overrides], cwd=work, capture_output=True, text=True)


def test_make_sync_succeeds_and_ends_by_saying_what_is_unresolved(work: Path) -> None:
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v2.py"))
    made = _make(work, "sync")
    assert made.returncode == 0, made.stderr
    last = [line.removeprefix("omni-port: ") for line in made.stderr.splitlines()[-5:]]
    assert last[0].startswith(
        "1 conflicts and 0 verify problems: these runners are not deployable until resolved"
    )
    assert last[1] == "resolve each conflict (candidates are lines of v2.py):"
    assert last[2] == (
        f"  omni-port resolve {BLOCK} --at '#K'    # #1 line 7 (0.70); #2 line 8 (0.70); "
        "#3 line 9 (0.52)"
    )
    assert last[3].startswith("or edit a conflict region in place")
    assert last[4].startswith("then run `make sync`")
    assert _make(work, "check").returncode != 0, "the gate refuses the same"
    verdict = lockfile.read_verdict(work / "g")
    assert verdict is not None and [p.split(": ")[1][:5] for p in verdict.problems] == ["OP310"]

    resolved = subprocess.run(
        [str(Path(sys.executable).parent / "omni-port"), "resolve", BLOCK, "--at", "#2"],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert resolved.returncode == 0, resolved.stderr
    made = _make(work, "sync")
    assert made.returncode == 0, made.stderr
    assert made.stderr.splitlines()[-1].endswith(
        "no conflicts and no verify problems: these runners are deployable"
    )
    assert _make(work, "check").returncode == 0
    assert lockfile.read_verdict(work / "g") == lockfile.Verdict(
        hashlib.sha256((work / "g" / lockfile.LOCK_NAME).read_bytes()).hexdigest(), ()
    )


# --- the upgrade target sticks (point 2) -----------------------------------------------------


def test_an_upgrade_moves_the_workspace_for_resolve_and_sync(cli: Cli, work: Path) -> None:
    config = "# Our runners.\n" + CONFIG.format(upstream="v1.py").replace(
        'base = "v1.py"', 'base = "v1.py"  # ported from'
    )
    (work / "pyproject.toml").write_text(config)
    result = cli.loud("upgrade", "--to", "v2.py", "--summary", "up.md")
    assert result.exit_code == 1, result.stderr
    # The configuration names the target now, edited in place: comments and layout kept.
    assert (work / "pyproject.toml").read_text() == config.replace(
        'upstream = "v1.py"', 'upstream = "v2.py"'
    )
    assert 'pinned in pyproject.toml [tool.omni-port]: base = "v1.py", upstream = "v2.py"' in (
        result.stderr
    )
    lock = lockfile.read_or_none(work / "g")
    assert lock is not None and (lock.upstream, lock.configured) == ("v2.py", "")
    # Every command agrees with what the upgrade wrote, byte for byte.
    assert cli("extract", "--check").exit_code == 0
    synced = cli("sync", "--check")
    assert synced.exit_code == 0, "nothing would change; the conflict is listed (check fails)"
    assert "OP301" in synced.stdout and "OP304" not in synced.stdout
    assert cli("check", "--no-cache").exit_code == 1
    # The summary's command names its target and works as written, from any later state.
    summary = (work / "up.md").read_text()
    command = next(
        line.split("`")[1] for line in summary.splitlines() if f"resolve {BLOCK}" in line
    )
    assert command.endswith("--upstream v2.py") and "'#1'" in command
    words = shlex.split(command.replace("'#1'", "'#2'"))
    assert words[:2] == ["omni-port", "resolve"]
    assert cli(*words[1:]).exit_code == 0
    # A plain sync takes the upgrade's target and replays the choice.
    again = cli.loud("sync")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert lockfile.read_or_none(work / "g").upstream == "v2.py"  # type: ignore[union-attr]
    assert cli("verify").exit_code == 0
    assert cli("check", "--no-cache").exit_code == 0


def test_a_plain_resolve_takes_the_last_syncs_upstream(cli: Cli, work: Path) -> None:
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    assert cli("upgrade", "--to", "v2.py", "--summary", "up.md").exit_code == 1
    assert cli("resolve", BLOCK, "--at", "#2").exit_code == 0
    patch = (work / "p" / "omni" / "R.sample.block-01.patch").read_text()
    # `self.sampler.warm_up()` exists only in v2: the candidates were v2's.
    assert "resolved-after: self.sampler.warm_up()" in patch


def test_editing_the_configured_upstream_moves_the_default(cli: Cli, work: Path) -> None:
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    assert cli("extract").exit_code == 0
    assert cli("sync", "--upstream", "v2.py").exit_code == 1
    assert cli("sync").exit_code == 1, "the explicit target sticks (and still conflicts)"
    assert lockfile.read_or_none(work / "g").upstream == "v2.py"  # type: ignore[union-attr]
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v3.py"))
    assert cli("sync").exit_code in (0, 1)
    assert lockfile.read_or_none(work / "g").upstream == "v3.py"  # type: ignore[union-attr]


def test_resolve_refuses_a_signature_edit_instead_of_recording_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = DATA / "splice" / "signature_changed"
    monkeypatch.chdir(case)
    config = ("--config", str(DATA / "pyproject.toml"))
    patches = tmp_path / "p"
    assert (
        cli(*config, "extract", "omni.py", "--base", "base.py", "--patches", patches).exit_code == 0
    )
    before = sorted((p.name, p.read_bytes()) for p in patches.rglob("*.patch"))
    result = cli(
        *config, "resolve", "omni.R.execute_model.edit-01", "--at", "#1",
        "--patches", patches, "--upstream", "upstream.py", "--generated", tmp_path / "g",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "OP004" in result.stderr and "signature" in result.stderr
    assert sorted((p.name, p.read_bytes()) for p in patches.rglob("*.patch")) == before


def test_resolve_refuses_a_place_that_would_not_hold(
    cli: Cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    before = (work / "p" / "omni" / "R.sample.block-01.patch").read_bytes()
    real = resolution.resolution_at
    monkeypatch.setattr(
        resolution,
        "resolution_at",
        lambda slot: Resolution("self.nowhere()", (), ()) if slot else real(slot),
    )
    result = cli("resolve", BLOCK, "--at", "#1")
    assert result.exit_code == 2
    assert "would not hold" in result.stderr
    assert (work / "p" / "omni" / "R.sample.block-01.patch").read_bytes() == before


def test_adopt_survives_re_extraction(cli: Cli, work: Path) -> None:
    assert cli("extract").exit_code == 0
    assert cli("adopt", EDIT, "--title", "Omni stats").exit_code == 0
    adopted = work / "p" / "omni" / "R.forward.block-01.patch"
    kept = adopted.read_bytes()
    extracted = cli.loud("extract")
    assert extracted.exit_code == 0
    assert "1 implicit edits" not in extracted.stderr
    assert adopted.read_bytes() == kept
    assert not (work / "p" / "omni" / "R.forward.edit-01.patch").exists()
    assert cli("extract", "--check").exit_code == 0
    assert cli("sync", "--upstream", "v1.py").exit_code == 0
    checked = cli("check", "--no-cache")
    assert checked.exit_code == 0, checked.stdout
    assert "OP407" not in checked.stdout, "an adopted edit is no implicit edit any more"


def test_every_finding_names_a_file_and_line_an_editor_can_open(cli: Cli, work: Path) -> None:
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    for command in (("sync",), ("verify",), ("check", "--no-cache")):
        result = cli(*command, "--json", "-")
        findings = json.loads(result.stdout)["findings"]
        assert findings, command
        for finding in findings:
            path, line = work / finding["path"], finding["line"]
            assert path.is_file(), f"{command}: {finding}"
            assert 1 <= line <= len(path.read_text().splitlines()), f"{command}: {finding}"


@pytest.mark.parametrize(
    ("path", "message", "expected"),
    [
        pytest.param(
            "g/omni.py",
            "a, b: 100%\nnext",
            "::error file=g/omni.py,line=3,col=1,title=OP310 unresolved-conflict::"
            "a, b: 100%25%0Anext",
            id="message-data",
        ),
        pytest.param(
            "dir,with:odd%/omni.py",
            "m",
            "::error file=dir%2Cwith%3Aodd%25/omni.py,line=3,col=1,"
            "title=OP310 unresolved-conflict::m",
            id="file-property",
        ),
    ],
)
def test_github_annotation_values_are_escaped(path: str, message: str, expected: str) -> None:
    finding = Finding(Code.OP310, path, 3, message)
    assert report.github_line(finding) == expected


def test_an_edit_keeps_its_id_and_resolution_when_an_edit_before_it_goes(
    cli: Cli, work: Path
) -> None:
    """Ids number a method's edits in source order, once: when one before it vanishes
    from the runner, an edit keeps its id, and its recorded resolution and title stay with
    it (the id of the edit that went is not handed on)."""
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    runner = work / "omni.py"
    plain = runner.read_text()
    runner.write_text(plain.replace("self.prepare(batch)", "self.prepare(batch, omni=True)"))
    assert cli("extract").exit_code == 0
    first = work / "p" / "omni" / "R.forward.edit-01.patch"
    second = work / "p" / "omni" / "R.forward.edit-02.patch"
    first.write_text(first.read_text().replace("title: ", "title: Prepared the omni way; ", 1))
    # A resolution written by hand (`resolve` refuses an edit that is no conflict).
    resolved = "\nresolved-after: self.run(batch)\n---\n"
    second.write_text(second.read_text().replace("\n---\n", resolved, 1))
    runner.write_text(plain)
    assert cli("extract").exit_code == 0
    assert not first.exists(), "the edit that went takes its file and title with it"
    kept = second.read_text()
    assert "record_omni_stats" in kept
    assert "resolved-after:" in kept, "the resolution stayed with its edit"
    assert "Prepared the omni way" not in kept
    # The runner's code of the edit changes where it stands: the choice stays with it.
    runner.write_text(plain.replace("self.record_omni_stats(batch)", "self.record_omni_stats()"))
    assert cli("extract").exit_code == 0
    edited = second.read_text()
    assert "self.record_omni_stats()" in edited and "resolved-after:" in edited
    assert not first.exists()
    # An edit before it comes back: a new edit, numbered in source order, and edit-02 stays.
    runner.write_text(runner.read_text().replace("self.prepare(batch)", "self.prepare(batch, 1)"))
    assert cli("extract").exit_code == 0
    assert (
        "self.prepare(batch, 1)" in first.read_text() and "resolved-after:" not in first.read_text()
    )
    assert "self.record_omni_stats()" in second.read_text()
    assert "resolved-after:" in second.read_text()
    assert cli("extract", "--check").exit_code == 0, "a second extract changes nothing"


# --- the same bytes from any working directory (point 4) -------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_outputs_do_not_depend_on_the_working_directory(
    cli: Cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "pyproject.toml").write_text(
        CONFIG.format(upstream="v1.py") + 'catalog = "catalog.md"\n'
    )
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    assert cli("catalog").exit_code == 0
    made = {name: _tree(work / name) for name in ("p", "g")}
    header = (work / "g" / "omni.py").read_text().splitlines()[:4]
    assert any(
        line == "# Regenerate: omni-port sync --patches p --upstream v1.py --generated g"
        for line in header
    ), header
    elsewhere = work.parent / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    for cwd, config in (
        (work / "g", "../pyproject.toml"),
        (elsewhere / "deep", str(work / "pyproject.toml")),
    ):
        monkeypatch.chdir(cwd)
        for command in ("extract", "sync", "catalog"):
            result = cli("--config", config, command, "--check")
            assert result.exit_code == 0, f"{command} --check from {cwd}: {result.stdout}"
        assert cli("--config", config, "check", "--no-cache").exit_code == 0
        assert cli("--config", config, "sync").exit_code == 0
        assert {name: _tree(work / name) for name in ("p", "g")} == made


# --- reports a program can read (point 5) -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("extract",), id="extract"),
        pytest.param(("sync",), id="sync"),
        pytest.param(("verify",), id="verify"),
        pytest.param(("check", "--no-cache"), id="check"),
        pytest.param(("check", "--no-cache", "--format", "github"), id="check-github"),
        pytest.param(("upgrade", "--to", "v2.py", "--summary", "up.md"), id="upgrade"),
    ],
)
def test_json_to_stdout_is_the_json_object_alone(
    cli: Cli, work: Path, command: tuple[str, ...]
) -> None:
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1, "a conflict: findings to print"
    result = cli.loud(*command, "--json", "-")
    assert result.exit_code in (0, 1), result.stderr
    document = json.loads(result.stdout)
    assert {"blocks", "findings", "counts"} <= set(document)
    assert result.stderr, "the findings and the summary went to stderr"


def test_gpu_delta_json_to_stdout_is_the_json_object_alone(cli: Cli) -> None:
    omni = DATA / "gpu" / "omni"
    vllm = (
        "--vllm",
        f"{DATA}/gpu/vllm_new/gpu_model_runner.py",
        "--vllm",
        f"{DATA}/gpu/vllm_old/gpu_model_runner.py",
    )
    result = cli("gpu-delta", omni, *vllm, "--parity", omni, "--json", "-")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["methods"] and " OP408 " in result.stderr
    assert "base" in result.stderr, "the text report went to stderr"


def test_diff_and_json_cannot_both_take_stdout(cli: Cli, work: Path) -> None:
    result = cli("extract", "--check", "--diff", "--json", "-")
    assert result.exit_code == 2
    assert result.stdout == ""


# --- one name per option (issue 14) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "command"),
    [
        pytest.param("--out", "--generated", ("sync",), id="sync"),
        pytest.param(
            "--out", "--generated", ("upgrade", "--to", "v1.py", "--summary", "u.md"), id="upgrade"
        ),
    ],
)
def test_an_old_option_name_still_works_and_warns(
    cli: Cli, work: Path, old: str, new: str, command: tuple[str, ...]
) -> None:
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    assert cli("extract").exit_code == 0
    result = cli(*command, old, "renamed")
    assert result.exit_code == 0, result.stderr
    assert (work / "renamed" / "omni.py").is_file()
    assert f"warning: {old} is deprecated" in result.stderr and f"use {new}" in result.stderr
    quiet = cli(*command, new, "renamed")
    assert "deprecated" not in quiet.stderr


def test_gpu_delta_allow_is_now_parity_allow(cli: Cli) -> None:
    omni = DATA / "gpu" / "omni"
    vllm = (
        "--vllm",
        f"{DATA}/gpu/vllm_new/gpu_model_runner.py",
        "--vllm",
        f"{DATA}/gpu/vllm_old/gpu_model_runner.py",
    )
    allow = DATA / "gpu" / "allow_all.txt"
    old = cli("gpu-delta", omni, *vllm, "--parity", omni, "--allow", allow)
    new = cli("gpu-delta", omni, *vllm, "--parity", omni, "--parity-allow", allow)
    assert old.exit_code == new.exit_code == 0
    assert "warning: --allow is deprecated" in old.stderr and "--parity-allow" in old.stderr
    assert old.stdout == new.stdout
    assert "deprecated" not in new.stderr


def test_a_place_the_gpu_runner_disputes_is_a_note_in_sync_and_check(
    cli: Cli, tmp_path: Path
) -> None:
    """Onto the patches' own base the NPU runner is reproduced, but where omni's GPU runner
    has the block across code that reads what it binds, sync and check say so (OP308, a
    note: the gate stays green)."""
    case = DATA / "rules" / "counterpart" / "no_onto_its_own_base_the_runner_is_reproduced"
    checkout = tmp_path / "omni"
    for member, name in (
        ("vllm_omni/platforms/npu/worker/npu_ar_model_runner.py", "omni.py"),
        ("vllm_omni/worker/gpu_ar_model_runner.py", "gpu.py"),
    ):
        (checkout / member).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(case / name, checkout / member)
    base = tmp_path / "base.py"
    shutil.copy(case / "base.py", base)
    patches, generated = tmp_path / "p", tmp_path / "g"
    assert cli("extract", checkout, "--base", base, "--patches", patches).exit_code == 0
    synced = cli("sync", "--patches", patches, "--upstream", base, "--generated", generated)
    assert synced.exit_code == 0, synced.stdout + synced.stderr
    assert " OP308 " in synced.stdout and "`self.dummy_logits(hidden)`" in synced.stdout
    checked = cli("check", checkout, "--base", base, "--patches", patches, "--generated", generated)
    assert checked.exit_code == 0, checked.stdout + checked.stderr
    assert " OP308 " in checked.stdout, checked.stdout
    # Both name the block's first line in the generated module: an editor can open it.
    for output in (synced.stdout, checked.stdout):
        (row,) = [line for line in output.splitlines() if " OP308 " in line]
        path, line = row.split(":")[:2]
        text = Path(path).read_text().splitlines()
        assert Path(path).parent.name == "g" and "self.split_outputs" in text[int(line)], row


# --- bad values in the lock are bad input, never an internal error ---------------------------


@pytest.mark.parametrize(
    ("key", "value", "bad"),
    [
        pytest.param("status", '"placed"', '"half-placed"', id="status"),
        pytest.param("kind", '"insertion"', '"sideways"', id="kind"),
        pytest.param("decided_by", '[\n        "anchor"\n      ]', '["guess"]', id="rule"),
        pytest.param("lines", "[", '"7-9", "x": [', id="lines"),
    ],
)
def test_a_lock_value_out_of_its_set_is_bad_input_at_its_line(
    cli: Cli, work: Path, key: str, value: str, bad: str
) -> None:
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    lock = work / "g" / lockfile.LOCK_NAME
    text = lock.read_text()
    assert f'"{key}": {value}' in text
    lock.write_text(text.replace(f'"{key}": {value}', f'"{key}": {bad}', 1))
    line = next(n for n, row in enumerate(lock.read_text().splitlines(), 1) if f'"{key}":' in row)
    for command in (("verify",), ("check", "--no-cache")):
        result = cli(*command)
        assert result.exit_code == 2, (command, result.stdout, result.stderr)
        assert f"g/omni-port.lock:{line}:1: OP201" in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr


# --- nothing a maintainer decided is dropped silently ----------------------------------------

RUNNER = """\
from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        # ---------- Omni-new ----------
        self.sampler.reset(logits)
        # ---------- Omni-new ----------
        return self.sampler(logits)
"""


def _base(reset: str) -> str:
    return (
        RUNNER.replace("from fakeacc.runner_v1 import NPUModelRunner", "class G: ...")
        .replace("class R(NPUModelRunner)", "class NPUModelRunner(G)")
        .replace(
            "        # ---------- Omni-new ----------\n        self.sampler.reset(logits)\n"
            "        # ---------- Omni-new ----------\n",
            f"        {reset}\n",
        )
    )


def _resolved_by_hand(patch: Path) -> str:
    text = patch.read_text().replace(
        "\n---\n", "\nresolved-after: self.prepare_sampler()\nresolved-by: M\n---\n", 1
    )
    patch.write_text(text)
    return text


def test_a_resolution_stays_when_another_base_changes_what_its_block_replaces(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "omni.py").write_text(RUNNER)
    (tmp_path / "a.py").write_text(_base("self.sampler.reset()"))
    (tmp_path / "b.py").write_text(_base("self.sampler.reset(True)"))
    (tmp_path / "pyproject.toml").write_text(
        CONFIG.format(upstream="a.py").replace('base = "v1.py"', 'base = "a.py"')
    )
    assert cli("extract").exit_code == 0
    patch = tmp_path / "p" / "omni" / "R.sample.block-01.patch"
    assert "replaces: self.sampler.reset()" in patch.read_text()
    _resolved_by_hand(patch)
    assert cli("extract", "--base", "b.py").exit_code == 0
    text = patch.read_text()
    assert "replaces: self.sampler.reset(True)" in text
    assert "resolved-after: self.prepare_sampler()" in text and "resolved-by: M" in text


def test_an_extraction_that_would_drop_a_resolution_refuses_unless_told(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "omni.py").write_text(RUNNER)
    (tmp_path / "a.py").write_text(_base("self.sampler.reset()"))
    (tmp_path / "pyproject.toml").write_text(
        CONFIG.format(upstream="a.py").replace('base = "v1.py"', 'base = "a.py"')
    )
    assert cli("extract").exit_code == 0
    patch = tmp_path / "p" / "omni" / "R.sample.block-01.patch"
    resolved = _resolved_by_hand(patch)
    line = resolved.splitlines().index("resolved-after: self.prepare_sampler()") + 1
    # Another release of the runners: the resolved block is gone.
    block = "\n".join(RUNNER.splitlines()[6:9]) + "\n"
    assert block.count("Omni-new") == 2
    (tmp_path / "omni.py").write_text(RUNNER.replace(block, "        self.sampler.reset()\n"))
    for command in (("extract",), ("extract", "--check"), ("upgrade", "--to", "a.py")):
        refused = cli(*command)
        assert refused.exit_code == 2, (command, refused.stderr)
        assert refused.stderr.startswith(f"p/omni/R.sample.block-01.patch:{line}:1: OP205 ")
        assert "by M" in refused.stderr and "--discard-decisions" in refused.stderr
        assert patch.read_text() == resolved, "nothing written"
    # The gate says so too, without touching anything.
    checked = cli("check", "--no-cache")
    assert (f"p/omni/R.sample.block-01.patch:{line}", "OP205") in _codes(checked.stdout)
    assert cli("extract", "--discard-decisions").exit_code == 0
    assert not patch.exists() or "resolved-after" not in patch.read_text()


def test_two_sources_of_one_runner_module_are_refused(cli: Cli, work: Path) -> None:
    (work / "other").mkdir()
    shutil.copy(work / "omni.py", work / "other" / "omni.py")
    result = cli("extract", "omni.py", "other/omni.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("other/omni.py:1:1: OP005 ")
    assert not (work / "p").exists()


def test_an_upgrade_stops_on_a_stray_marker_as_extract_does(cli: Cli, work: Path) -> None:
    """A release whose marker lost its partner (vllm-omni 0.30.0 and 0.32.0rc1 have one)."""
    runner = work / "omni.py"
    runner.write_text(runner.read_text() + "        # ---------- Omni-new ----------\n")
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py"))
    config = (work / "pyproject.toml").read_text()
    for command in (("extract",), ("upgrade", "--to", "v2.py")):
        refused = cli(*command)
        assert refused.exit_code == 2, (command, refused.stderr)
        assert refused.stderr.startswith("omni.py:18:9: OP102 ")
        assert not (work / "p").exists() and not (work / "g").exists()
    assert (work / "pyproject.toml").read_text() == config
    # --lenient takes everything else, and the workspace lists what it took from then on.
    upgraded = cli.loud("upgrade", "--lenient", "--to", "v2.py", "--summary", "up.md")
    assert upgraded.exit_code == 1
    assert ("omni.py:18", "OP102") in _codes(upgraded.stdout)
    assert 'marker-allow = "marker-allow.txt"\n' in (work / "pyproject.toml").read_text()
    assert _entries(work / "marker-allow.txt") == ["omni.py:18: OP102"]
    assert "omni.py:18: OP102" in upgraded.stderr, "it says which it added"
    # Later commands agree with the upgrade; the reviewed marker is a note, not a failure.
    extracted = cli("extract", "--check", "--json", "-")
    assert extracted.exit_code == 0, extracted.stderr
    notes = json.loads(extracted.stdout)["findings"]
    assert ("OP102", "note") in [(f["code"], f["severity"]) for f in notes]
    assert {f["severity"] for f in notes} == {"note"}
    assert cli("sync", "--check").exit_code == 0


def _entries(path: Path) -> list[str]:
    """What each entry of a marker-allow list names (its reason left out)."""
    lines = path.read_text().splitlines()
    return [line.split("  ")[0] for line in lines if line and not line.startswith("#")]


def test_a_defect_that_moves_stops_the_upgrade_until_it_is_accepted_again(
    cli: Cli, work: Path
) -> None:
    """0.30.0 -> 0.32.0rc1: the lost marker is the same, but at another line. The reviewed
    entry names the old place: the upgrade stops on the moved one, and --lenient lists
    exactly it; the gate then fails on the entry left behind until it goes."""
    runner = work / "omni.py"
    runner.write_text(runner.read_text() + "        # ---------- Omni-new ----------\n")
    (work / "allow.txt").write_text("# reviewed\nomni.py:18: OP102  the lost opener\n")
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v1.py") + _ALLOW)
    assert cli("upgrade", "--to", "v2.py", "--summary", "up.md").exit_code == 1
    assert _marker_rows(cli, "--no-cache") == [("omni.py", 18, "OP102", "note")]
    # The next release: one line more above the same stray marker.
    runner.write_text(runner.read_text().replace("    def ", "\n    def ", 1))
    allowed, config = (work / "allow.txt").read_text(), (work / "pyproject.toml").read_text()
    refused = cli("upgrade", "--to", "v3.py", "--summary", "up.md")
    assert refused.exit_code == 2
    assert _codes(refused.stderr) == [("omni.py:19", "OP102"), ("allow.txt:2", "OP005")]
    assert "'omni.py:19: OP102  REASON' in allow.txt" in refused.stderr
    assert (work / "allow.txt").read_text() == allowed
    assert (work / "pyproject.toml").read_text() == config
    upgraded = cli("upgrade", "--lenient", "--to", "v3.py", "--summary", "up.md")
    assert upgraded.exit_code == 1
    assert ("omni.py:19", "OP102") in _codes(upgraded.stdout)
    assert _entries(work / "allow.txt") == ["omni.py:18: OP102", "omni.py:19: OP102"]
    assert (work / "allow.txt").read_text().startswith(allowed), "reviewed entries kept"
    assert 'upstream = "v3.py"' in (work / "pyproject.toml").read_text()
    assert (work / "pyproject.toml").read_text().count("marker-allow") == 1
    # The entry left on the old line would accept the next defect there: the gate fails
    # on it (extract only notes it), and not once it is gone.
    assert cli("extract", "--check").exit_code == 0
    assert _marker_rows(cli, "--no-cache") == [
        ("omni.py", 19, "OP102", "note"),
        ("allow.txt", 2, "OP005", "error"),
    ]
    moved = (work / "allow.txt").read_text().replace("omni.py:18: OP102  the lost opener\n", "")
    (work / "allow.txt").write_text(moved)
    # An edited list is another check: no cached answer stands for it.
    assert _marker_rows(cli) == [("omni.py", 19, "OP102", "note")]


def _marker_rows(cli: Cli, *flags: str) -> list[tuple[str, int, str, str]]:
    """(path, line, code, severity) of what `check` says of malformed markers and of the
    marker-allow list."""
    checked = cli("check", *flags, "--format", "json")
    assert checked.exit_code in (0, 1), checked.stderr
    rows = [json.loads(line) for line in checked.stdout.splitlines()]
    return [
        (r["path"], r["line"], r["code"], r["severity"])
        for r in rows
        if r["code"] == "OP005" or r["kind"] == "malformed-marker"
    ]


#: The marker-allow list of a workspace, as the tests here name it.
_ALLOW = 'marker-allow = "allow.txt"\n'


def test_the_gate_only_notes_an_entry_for_a_file_it_did_not_read(cli: Cli, work: Path) -> None:
    """The release before an upgrade: its entry can accept nothing of the sources read."""
    (work / "allow.txt").write_text("vllm-omni==0.30.0/vllm_omni/x.py:133: OP102  lost opener\n")
    (work / "pyproject.toml").write_text(CONFIG.format(upstream="v2.py") + _ALLOW)
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    assert _marker_rows(cli, "--no-cache") == [("allow.txt", 1, "OP005", "note")]


def test_an_upgrade_into_other_folders_leaves_the_configuration_be(cli: Cli, work: Path) -> None:
    """Only an upgrade of the workspace moves it: one that writes its patches and runners
    elsewhere (an experiment, a test run from a repository's root) pins nothing."""
    config = (work / "pyproject.toml").read_text()
    result = cli("upgrade", "--to", "v3.py", "--patches", "p2", "--generated", "g2")
    assert result.exit_code in (0, 1), result.stderr
    assert (work / "g2" / lockfile.LOCK_NAME).is_file()
    assert (work / "pyproject.toml").read_text() == config


def test_resolve_refuses_a_block_the_sync_places(cli: Cli, work: Path) -> None:
    """The implicit edit of `forward` is placed on v2: nothing to resolve, nothing written."""
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    patch = work / "p" / "omni" / "R.forward.edit-01.patch"
    before = patch.read_bytes()
    refused = cli("resolve", EDIT, "--at", "#1")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("p/omni/R.forward.edit-01.patch:2:1: OP005 ")
    assert f"{EDIT} is not a conflict: it is placed at g/omni.py:" in refused.stderr
    assert patch.read_bytes() == before
