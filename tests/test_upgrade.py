"""Maintainer workflow on a synthetic three-version upgrade: upgrade, resolve, replay, adopt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omni_port.model import RESOLVE_FIRST, Code, Finding
from omni_port.sync.upgrade import verification_problems
from tests.conftest import Cli
from tests.golden import DATA

BLOCK = "omni.R.sample.block-01"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("v1.py", "v2.py", "v3.py", "omni.py"):
        shutil.copy(DATA / "upgrade" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.omni-port]\nsource = "omni.py"\nbase = "v1.py"\n'
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_conflict_resolved_once_then_replayed(cli: Cli, work: Path) -> None:
    result = cli(
        "upgrade", "--to", "v2.py", "--patches", "p", "--generated", "g", "--summary", "up.md"
    )
    assert result.exit_code == 1, result.stderr
    summary = (work / "up.md").read_text()
    assert "## Conflicts to resolve" in summary and BLOCK in summary
    assert f"omni-port resolve {BLOCK}" in summary

    assert (
        cli("resolve", BLOCK, "--at", "#2", "--patches", "p", "--upstream", "v2.py").exit_code == 0
    )
    patch = (work / "p" / "omni" / "R.sample.block-01.patch").read_text()
    assert "resolved-after: self.sampler.warm_up()" in patch

    assert cli("sync", "--patches", "p", "--upstream", "v2.py", "--generated", "g").exit_code == 0
    lines = (work / "g" / "omni.py").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "apply_omni_penalties" in line)
    assert lines[at - 2].strip() == "self.sampler.warm_up()"

    again = cli(
        "upgrade", "--to", "v3.py", "--patches", "p", "--generated", "g3", "--summary", "up3.md"
    )
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "Conflicts to resolve" not in (work / "up3.md").read_text()


def test_summary_reports_methods_and_new_upstream_members(cli: Cli, work: Path) -> None:
    result = cli(
        "upgrade", "--to", "v3.py", "--patches", "p", "--generated", "g", "--summary", "up.md"
    )
    assert result.exit_code == 1, result.stderr  # v3 moves code a block sits in
    summary = (work / "up.md").read_text()
    assert "## Every block" in summary and "omni.R.forward.edit-01" in summary
    assert "signature now `def sample(self, logits, generator=None):`" in summary
    assert "added `capture`" in summary


def test_resolve_needs_a_choice_without_a_terminal(cli: Cli, work: Path) -> None:
    assert cli("extract", "omni.py", "--base", "v1.py", "--patches", "p").exit_code == 0
    result = cli("resolve", BLOCK, "--patches", "p", "--upstream", "v2.py")
    assert result.exit_code == 2
    assert "--at" in result.stderr


def test_resolve_unknown_block_is_bad_input(cli: Cli, work: Path) -> None:
    assert cli("extract", "omni.py", "--base", "v1.py", "--patches", "p").exit_code == 0
    result = cli(
        "resolve", "omni.R.nothing.block-09", "--at", "#1", "--patches", "p", "--upstream", "v2.py"
    )
    assert result.exit_code == 2
    assert "OP004" in result.stderr


def test_adopt_turns_an_implicit_edit_into_a_marked_block(cli: Cli, work: Path) -> None:
    assert cli("extract", "omni.py", "--base", "v1.py", "--patches", "p").exit_code == 0
    assert (work / "p" / "omni" / "R.forward.edit-01.patch").is_file()
    result = cli.loud("adopt", "omni.R.forward.edit-01", "--title", "Omni stats", "--patches", "p")
    assert result.exit_code == 0, result.stderr
    assert "omni.R.forward.block-01" in result.stderr
    assert not (work / "p" / "omni" / "R.forward.edit-01.patch").exists()
    patch = (work / "p" / "omni" / "R.forward.block-01.patch").read_text()
    assert "marked: yes" in patch and "title: Omni stats" in patch
    assert cli("sync", "--patches", "p", "--upstream", "v1.py", "--generated", "g").exit_code == 0
    lines = (work / "g" / "omni.py").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "record_omni_stats" in line)
    assert "Omni-new ---" in lines[at - 1] and "Omni-new ---" in lines[at + 1]
    catalog = cli("catalog", "--patches", "p", "--out", "-")
    assert "### forward - Omni stats" in catalog.stdout


def test_adopt_refuses_an_edit_without_statements(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = DATA / "splice" / "header_and_signature"
    monkeypatch.chdir(case)
    patches = tmp_path / "p"
    config = ("--config", DATA / "pyproject.toml")
    extracted = cli(*config, "extract", "omni.py", "--base", "base.py", "--patches", patches)
    assert extracted.exit_code == 0, extracted.stderr
    result = cli(
        "--config",
        DATA / "pyproject.toml",
        "adopt",
        "omni.R.execute_model.edit-01",
        "--patches",
        patches,
    )
    assert result.exit_code == 2
    assert "OP004" in result.stderr


def test_bases_ranks_the_release_the_runner_was_ported_from(cli: Cli, work: Path) -> None:
    result = cli("bases", "omni.py", "--candidates", "v3.py,v2.py,v1.py")
    assert result.exit_code == 0, result.stderr
    ranked = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert ranked[0] == "v1.py"


def test_a_name_nothing_defines_is_listed_once() -> None:
    where = ("gen.py", 12, 9)
    sync_says = Finding(Code.OP303, where[0], where[1], "name 'x'", where[2])
    verify_says = Finding(Code.OP502, where[0], where[1], "`x`", where[2])
    elsewhere = Finding(Code.OP502, "gen.py", 40, "`y`", 5)
    found = verification_problems([sync_says, verify_says, elsewhere])
    assert found == [sync_says, elsewhere]


def test_an_obsolete_edit_is_dropped_with_a_reason_kept_in_the_lock(cli: Cli, work: Path) -> None:
    """`resolve --drop` records that an omni edit is obsolete: it needs a reason and no place,
    the next sync generates nothing of it, says so (OP312) and keeps the reason in the lock."""
    assert cli("extract", "omni.py", "--base", "v1.py", "--patches", "p").exit_code == 0
    args = ("resolve", BLOCK, "--drop", "--patches", "p", "--upstream", "v2.py")
    without = cli(*args)
    assert without.exit_code == 2 and "--why" in without.stderr
    both = cli(*args, "--at", "#1", "--why", "obsolete")
    assert both.exit_code == 2 and "--at" in both.stderr
    assert cli(*args, "--why", "upstream samples omni's way now").exit_code == 0
    patch = (work / "p" / "omni" / "R.sample.block-01.patch").read_text()
    assert "resolved-why: upstream samples omni's way now" in patch

    synced = cli("sync", "--patches", "p", "--upstream", "v2.py", "--generated", "g")
    assert synced.exit_code == 0, synced.stdout + synced.stderr
    assert "apply_omni_penalties" not in (work / "g" / "omni.py").read_text()
    assert f"OP312 omni.py: {BLOCK}: dropped as obsolete" in synced.stdout + synced.stderr
    lock = (work / "g" / "omni-port.lock").read_text()
    assert "dropped as obsolete" in lock and "upstream samples omni's way now" in lock


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("upgrade", "--to", "vllm-ascend===0.30.0"), id="upgrade-to"),
        pytest.param(
            ("upgrade", "--to", "v2.py", "--base", "vllm-ascend>=0.26"), id="upgrade-base"
        ),
        pytest.param(("sync", "--upstream", "vllm-ascend~=0.30"), id="sync-upstream"),
        pytest.param(("extract", "--base", "vllm-ascend=="), id="extract-base"),
        pytest.param(("extract", "vllm-omni>=0.30"), id="extract-source"),
    ],
)
def test_a_pin_gone_wrong_is_a_bad_option_and_nothing_is_written(
    cli: Cli, work: Path, command: tuple[str, ...]
) -> None:
    def files() -> list[str]:
        # The workspace's lock (``.omni-port/``) is the tool's own state, as a cache is.
        return sorted(p.name for p in work.iterdir() if p.name != ".omni-port")

    before = files()
    result = cli(*command)
    pin = next(arg for arg in command if "=" in arg or ">" in arg)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"{pin}:0:1: OP005 "), result.stderr
    assert files() == before


def test_a_configured_path_that_looks_like_a_pin_is_read_from_any_folder(
    cli: Cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "v1.py").rename(work / "v1>=0.py")
    (work / "pyproject.toml").write_text(
        '[tool.omni-port]\nsource = "omni.py"\nbase = "v1>=0.py"\nupstream = "v2.py"\n'
    )
    (work / "below").mkdir()
    monkeypatch.chdir(work / "below")
    assert cli("extract").exit_code == 0
    assert "base: v1>=0.py\n" in (work / "patches" / "omni-port.index").read_text()
    assert cli("sync").exit_code == 1  # the conflict of omni.R.sample on v2.py


@pytest.mark.parametrize(
    ("target", "code", "outcome"),
    [
        pytest.param("v1.py", 0, "2 placed, 0 conflicts, no verify problems", id="clean"),
        pytest.param("v2.py", 1, "1 placed, 1 conflicts, no verify problems", id="a-conflict"),
        pytest.param(
            "v5.py",
            1,
            "2 placed, 0 conflicts, 2 verify problems (1 OP303, 1 OP507)",
            id="verify-problems-only",
        ),
    ],
)
def test_the_last_line_of_an_upgrade_says_why_it_exits_as_it_does(
    cli: Cli, work: Path, target: str, code: int, outcome: str
) -> None:
    """v5.py calls `sample`'s parameter `scores`: the block, placed, reads `logits`."""
    (work / "v5.py").write_text((work / "v1.py").read_text().replace("logits", "scores"))
    result = cli.loud("upgrade", "--to", target, "--summary", "up.md")
    assert result.exit_code == code, result.stderr
    last = result.stderr.splitlines()[-1]
    unresolved = ": not deployable until resolved" if code else ""
    assert last == f"omni-port: {outcome}{unresolved}; summary in up.md"
    to_stdout = cli.loud("upgrade", "--to", target, "--summary", "-")
    assert to_stdout.exit_code == code
    assert (
        to_stdout.stderr.splitlines()[-1] == f"omni-port: {outcome}{unresolved}; summary on stdout"
    )


#: An implicit edit binds `penalty` where v2.py inserts a statement (ambiguous: a conflict);
#: the edit that reads it, after `reset()`, is placed.
BOUND_IN_A_CONFLICT = """from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def sample(self, logits):
        self.prepare_sampler()
        penalty = self.omni_penalty(logits)
        self.sampler.reset()
        self.apply(penalty)
        return self.sampler(logits)

    def forward(self, batch):
        self.prepare(batch)
        self.run(batch)
        return self.result
"""


def _upgraded(cli: Cli) -> tuple[str, str]:
    """The last line of an upgrade onto v2.py, and its summary's verification section."""
    result = cli.loud(
        "upgrade", "--to", "v2.py", "--patches", "p", "--generated", "g", "--summary", "up.md"
    )
    assert result.exit_code == 1, result.stderr
    summary = Path("up.md").read_text()
    return result.stderr.splitlines()[-1], summary.split("## Verification", 1)[1]


def test_a_read_only_a_conflict_binds_is_the_conflicts_until_it_is_resolved(
    cli: Cli, work: Path
) -> None:
    """issue 46: a placed edit reads a name only a conflict's commented-out code binds. It is
    one problem (verify's OP507 at the read, naming the conflict; not also the sync's OP303),
    counted behind the conflicts; the gate fails. Dropped, the conflict no longer binds it:
    the read is an ordinary unbound name again, and the gate still fails."""
    (work / "omni.py").write_text(BOUND_IN_A_CONFLICT)
    conflict = "omni.R.sample.edit-01"
    last, section = _upgraded(cli)
    assert last.startswith(
        "omni-port: 1 placed, 1 conflicts, 1 verify problems (1 OP507 behind conflicts): "
    ), last
    (problem,) = [line for line in section.splitlines() if line.startswith("- `")]
    assert problem.startswith("- `g/omni.py:20` OP507 block omni.R.sample.edit-02 reads `penalty`")
    assert f"which the conflict {conflict} (line 10) binds" in problem
    assert problem.endswith(f"commented-out code: {RESOLVE_FIRST}")
    verified = cli.loud("verify", "--generated", "g", "--patches", "p")
    assert verified.exit_code == 1
    assert "g/omni.py:20:20: OP507 " in verified.stdout and " OP502 " not in verified.stdout
    assert "1 conflicts and 1 verify problems (1 behind conflicts): " in verified.stderr

    dropped = cli(
        "resolve", conflict, "--drop", "--why", "x", "--patches", "p", "--upstream", "v2.py"
    )
    assert dropped.exit_code == 0, dropped.stderr
    last, section = _upgraded(cli)
    assert last.startswith(
        "omni-port: 1 placed, 0 conflicts, 2 verify problems (1 OP303, 1 OP507): "
    )
    assert RESOLVE_FIRST not in section and " OP507 block omni.R.sample.edit-02 " in section
    again = cli.loud("verify", "--generated", "g", "--patches", "p")
    assert again.exit_code == 1 and RESOLVE_FIRST not in again.stdout
    assert "0 conflicts and 1 verify problems: " in again.stderr


def test_the_summary_counts_the_notes_verify_counts(cli: Cli, work: Path) -> None:
    """The sync's own notes (here a comment omni added outside every block, OP902) are not
    verify's: the summary's verification section says what ``omni-port verify`` says."""
    omni = work / "omni.py"
    text = omni.read_text().replace(
        "        self.run(batch)\n", "        # omni: run\n        self.run(batch)\n"
    )
    omni.write_text(text)
    result = cli(
        "upgrade", "--to", "v3.py", "--patches", "p", "--generated", "g", "--summary", "up.md"
    )
    said = result.stdout + result.stderr
    assert " OP902 " in said, said
    section = (work / "up.md").read_text().split("## Verification of the generated runners")[1]
    verified = cli.loud("verify", "--generated", "g", "--patches", "p")
    assert " problems, " in verified.stdout + verified.stderr, verified.stdout + verified.stderr
    counts = (verified.stdout + verified.stderr).rsplit(" problems, ", 1)[1]
    notes = int(counts.split(" note", 1)[0])
    if notes:
        assert f"- {notes} note{'s' * (notes != 1)} of `omni-port verify`:" in section, section
    else:
        assert "notes" not in section, section


def test_an_upgrade_reads_the_sources_verify_needs_while_it_syncs(
    cli: Cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 46: from an empty cache the package sources verification reads (vLLM's and
    vllm-omni's, 24 MB) were downloaded after the sync; they are read while it runs, and
    the summary is the same."""
    import threading

    from omni_port.api import inputs, workflows

    before = cli("upgrade", "--to", "v2.py", "--patches", "p0", "--generated", "g0")
    first = (work / "omni-port-upgrade.md").read_bytes()
    reading = threading.Event()
    waited: list[bool] = []
    real_texts, real_sync = inputs.package_texts, workflows.sync_patches

    def texts(*args: object, **kwargs: object) -> object:
        reading.set()
        return real_texts(*args, **kwargs)  # type: ignore[arg-type]

    def sync(*args: object, **kwargs: object) -> object:
        waited.append(reading.wait(timeout=20))  # the sync ends once the reading began
        return real_sync(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(inputs, "package_texts", texts)
    monkeypatch.setattr(workflows, "sync_patches", sync)
    after = cli("upgrade", "--to", "v2.py", "--patches", "p0", "--generated", "g0")
    assert waited == [True]
    assert after.exit_code == before.exit_code == 1, after.stderr
    assert (work / "omni-port-upgrade.md").read_bytes() == first
