"""The command line through click's CliRunner: every exit path of every command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from omni_port.extract import extractor
from omni_port.model import Code
from tests.conftest import Cli, read_tree
from tests.golden import DATA

BASE = "upstream/v1/model_runner_v1.py"


def test_extract_clean_exit_0_and_summary(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    result = cli.loud("extract", "omni", "--base", BASE, "--patches", tmp_path / "p")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "marked blocks" in result.stderr and "wrote" in result.stderr


def test_extract_check_exit_1_when_patches_would_change(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    result = cli("extract", "omni", "--patches", tmp_path / "p", "--check")
    assert result.exit_code == 1
    assert not (tmp_path / "p").exists()


def test_extract_check_exit_0_when_current(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    assert cli("extract", "omni", "--patches", tmp_path / "p").exit_code == 0
    assert cli("extract", "omni", "--patches", tmp_path / "p", "--check").exit_code == 0


def test_extract_diff_prints_unified_diff(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    result = cli("extract", "omni", "--patches", tmp_path / "p", "--check", "--diff")
    assert result.exit_code == 1
    assert "+++ b/omni-port.index" in result.stdout


def test_extract_malformed_exit_2_writes_nothing(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    result = cli("extract", "scan/unopened/input.py", "--patches", tmp_path / "p")
    assert result.exit_code == 2
    assert "scan/unopened/input.py:5:9: OP102" in result.stderr
    assert not (tmp_path / "p").exists()


def test_extract_one_bad_file_among_good_ones_writes_nothing(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    result = cli("extract", "omni", "scan/unclosed/input.py", "--patches", tmp_path / "p")
    assert result.exit_code == 2
    assert "OP101" in result.stderr
    assert not (tmp_path / "p").exists()


def test_extract_lenient_reports_and_exits_1(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    odd = (DATA / "scan" / "odd_count" / "input.py").read_text()
    runner = "class R:\n" + "".join(f"    {line}\n" for line in odd.splitlines())
    Path("runner.py").write_text(runner)
    Path("pyproject.toml").write_text("[tool.omni-port]\n")  # an audit's workspace
    result = cli("extract", "runner.py", "--lenient", "--patches", "p")
    assert result.exit_code == 1
    assert "runner.py:8:9: OP101" in result.stdout
    assert (tmp_path / "p" / "omni-port.index").is_file()


#: A runner with two malformed markers: a closer whose opener was lost (OP102 at 6), and a
#: marker inside a call (OP104 at 10).
TWO_DEFECTS = """\
class R:
    def forward(self, x):
        self.prepare(x)
        y = self.model(x)
        return y
        #  ------ Omni-new ------

    def sample(self, logits):
        tokens = self.sampler(
            # ---------- Omni-new ----------
            logits,
        )
        return tokens
"""


@pytest.fixture
def two_defects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose marker-allow list names the first defect of ``TWO_DEFECTS``."""
    monkeypatch.chdir(tmp_path)
    Path("runner.py").write_text(TWO_DEFECTS)
    Path("pyproject.toml").write_text(
        '[tool.omni-port]\nsource = "runner.py"\nmarker-allow = "allow.txt"\n'
    )
    Path("allow.txt").write_text("# reviewed\nrunner.py:6: OP102  the opener was lost\n")
    return tmp_path


def _rows(stdout: str) -> list[tuple[str, int, str, str]]:
    findings = json.loads(stdout)["findings"]
    return [(f["path"], f["line"], f["code"], f["severity"]) for f in findings]


def test_a_listed_marker_defect_is_a_note_and_an_unlisted_one_exits_2(
    cli: Cli, two_defects: Path
) -> None:
    refused = cli("extract", "--patches", "p")
    assert refused.exit_code == 2
    assert [line.split(" ")[:2] for line in refused.stderr.splitlines()] == [
        ["runner.py:10:13:", "OP104"]
    ]
    assert not (two_defects / "p").exists()
    Path("allow.txt").write_text(Path("allow.txt").read_text() + "runner.py:10: OP104  ok\n")
    accepted = cli("extract", "--patches", "p", "--json", "-")
    assert accepted.exit_code == 0, accepted.stderr
    rows = [r for r in _rows(accepted.stdout) if r[2] != "OP506"]
    assert rows[:2] == [
        ("runner.py", 6, "OP102", "note"),
        ("runner.py", 10, "OP104", "note"),
    ]
    assert (two_defects / "p" / "omni-port.index").is_file()


def test_a_marker_allow_entry_that_matches_no_defect_is_reported(
    cli: Cli, two_defects: Path
) -> None:
    Path("runner.py").write_text(
        TWO_DEFECTS.replace("            # ---------- Omni-new ----------\n", "")
    )
    Path("allow.txt").write_text("runner.py:6: OP102  lost\nrunner.py:10: OP104  ok\n")
    result = cli("extract", "--patches", "p", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert ("allow.txt", 2, "OP005", "note") in _rows(result.stdout)
    assert ("allow.txt", 1, "OP005", "note") not in _rows(result.stdout)


def test_extract_lenient_takes_every_defect_and_the_listed_ones_stay_notes(
    cli: Cli, two_defects: Path
) -> None:
    """An audit: --lenient extracts everything; what the list names is reviewed."""
    result = cli("extract", "--lenient", "--patches", "p", "--json", "-")
    assert result.exit_code == 1
    rows = _rows(result.stdout)
    assert ("runner.py", 6, "OP102", "note") in rows
    assert ("runner.py", 10, "OP104", "error") in rows
    assert (two_defects / "p" / "omni-port.index").is_file()
    assert Path("allow.txt").read_text().count("\n") == 2, "extract writes no list"


def test_a_marker_allow_list_that_is_not_there_is_exit_2_at_its_key(
    cli: Cli, two_defects: Path
) -> None:
    Path("allow.txt").write_text("runner.py:6: OP102  lost\nrunner.py:10: OP104  ok\n")
    assert cli("extract", "--patches", "p").exit_code == 0
    Path("allow.txt").unlink()
    for command in (("extract",), ("check", "--no-cache")):
        result = cli(*command)
        assert result.exit_code == 2, (command, result.stderr)
        assert result.stderr.startswith("pyproject.toml:3:1: OP005 "), result.stderr


def test_extract_syntax_error_shows_caret(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "npu_model_runner.py"
    bad.write_text("def f(:\n    pass\n")
    config = ("--config", DATA / "pyproject.toml")  # no base to download
    result = cli(*config, "extract", bad, "--patches", tmp_path / "p")
    assert result.exit_code == 2
    assert "OP002" in result.stderr and "^" in result.stderr


def test_extract_missing_source_exit_2(cli: Cli, tmp_path: Path) -> None:
    result = cli("extract", tmp_path / "nowhere", "--patches", tmp_path / "p")
    assert result.exit_code == 2
    assert "OP003" in result.stderr


def test_extract_json_report(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = cli("extract", "omni", "--base", BASE, "--patches", tmp_path / "p", "--json", report)
    assert result.exit_code == 0
    document = json.loads(report.read_text())
    assert set(document) == {"blocks", "findings", "counts"}
    kinds = {b["kind"] for b in document["blocks"]}
    assert {"insertion", "replacement", "class-level", "contained"} <= kinds
    first = document["blocks"][0]
    assert {"id", "kind", "module", "class", "method", "status", "confidence", "lines"} <= set(
        first
    )


def test_usage_error_exit_2(cli: Cli) -> None:
    assert cli("extract", "--no-such-flag").exit_code == 2


def test_internal_error_exit_123(
    cli: Cli, in_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("synthetic failure")

    monkeypatch.setattr(extractor, "extract_module", boom)
    result = cli("extract", "omni", "--patches", tmp_path / "p")
    assert result.exit_code == 123
    assert "internal error" in result.stderr


def test_bad_config_exit_2(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.omni-port]\nsourse = "x"\n')
    result = cli.loud("--config", config, "codes")
    assert result.exit_code == 2
    assert "unknown key 'sourse'" in result.stderr


def test_codes_lists_every_code(cli: Cli) -> None:
    result = cli("codes")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == [c.value for c in Code]


def _synced(cli: Cli, tmp_path: Path, upstream: str = BASE) -> tuple[Path, Path]:
    patches, out = tmp_path / "p", tmp_path / "g"
    assert cli("extract", "omni", "--base", BASE, "--patches", patches).exit_code == 0
    assert (
        cli("sync", "--patches", patches, "--upstream", upstream, "--generated", out).exit_code == 0
    )
    return patches, out


def test_sync_second_run_is_a_noop(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    patches, out = _synced(cli, tmp_path)
    before = read_tree(out)
    result = cli.loud("sync", "--patches", patches, "--upstream", BASE, "--generated", out)
    assert result.exit_code == 0
    assert "unchanged" in result.stderr
    assert read_tree(out) == before


def test_sync_check_exit_1_after_hand_edit(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    patches, out = _synced(cli, tmp_path)
    target = out / "npu_model_runner.py"
    target.write_text(target.read_text() + "# edited by hand\n")
    result = cli(
        "sync", "--patches", patches, "--upstream", BASE, "--generated", out, "--check", "--diff"
    )
    assert result.exit_code == 1
    assert "-# edited by hand" in result.stdout
    assert target.read_text().endswith("# edited by hand\n")


def test_sync_missing_patches_exit_2(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    result = cli(
        "sync", "--patches", tmp_path / "none", "--upstream", BASE, "--generated", tmp_path / "g"
    )
    assert result.exit_code == 2
    assert "OP204" in result.stderr


def test_sync_json_lists_placements(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    patches, out = _synced(cli, tmp_path)
    report = tmp_path / "sync.json"
    assert (
        cli(
            "sync", "--patches", patches, "--upstream", BASE, "--generated", out, "--json", report
        ).exit_code
        == 0
    )
    blocks = json.loads(report.read_text())["blocks"]
    assert blocks and all(b["status"] in ("placed", "carried") for b in blocks)
    placed = [b for b in blocks if b["status"] == "placed"]
    assert all(b["lines"][0] >= 1 for b in placed if b["kind"] != "deletion")


def test_sync_never_touches_files_it_does_not_own(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "g"
    out.mkdir()
    (out / "__init__.py").write_text("# ours\n")
    (out / "README.md").write_text("readme\n")
    _synced(cli, tmp_path)
    assert (out / "__init__.py").read_text() == "# ours\n"
    assert (out / "README.md").read_text() == "readme\n"


def test_data_dir_untouched_by_cli_tests() -> None:
    assert not (DATA / "patches").exists()


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("check", "--no-cache"), id="check"),
        pytest.param(("extract", "omni"), id="extract"),
        pytest.param(
            ("upgrade", "omni", "--to", BASE, "--summary", "{missing}/up.md"), id="summary"
        ),
    ],
)
def test_a_report_into_a_folder_that_does_not_exist_is_a_usage_error(
    cli: Cli, in_data: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    missing = tmp_path / "nonexistent" / "dir"
    args = [arg.format(missing=missing) for arg in command]
    if "--summary" not in args:
        args += ["--json", str(missing / "x.json")]
    if args[0] != "extract":
        args += ["--generated", str(tmp_path / "g")]
    result = cli(*args, "--patches", tmp_path / "p")
    assert result.exit_code == 2, result.stderr
    assert "is no directory" in result.stderr
    assert not (tmp_path / "nonexistent").exists()
    assert not (tmp_path / "p").exists()


def test_a_patch_file_that_is_a_symlink_stays_one(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    """A maintainer who keeps a reviewed patch elsewhere and links it: a rewrite goes
    through the link, which stays a link."""
    patches = tmp_path / "p"
    assert cli("extract", "omni", "--base", BASE, "--patches", patches).exit_code == 0
    linked = next(patches.rglob("*.block-01.patch"))
    kept = tmp_path / "reviewed.patch"
    right = linked.read_text().replace("title: ", "title: Reviewed ", 1)
    # Stale lines extract rewrites: the origin of the block, the hash of the source.
    kept.write_text(right.replace("origin: ", "origin: x", 1))
    linked.unlink()
    linked.symlink_to(kept)
    index = patches / "omni-port.index"
    index_kept = patches / "index.reviewed"
    index_kept.write_text(index.read_text().replace("source-sha256: ", "source-sha256: stale", 1))
    index.unlink()
    index.symlink_to(index_kept.name)
    changed = cli.loud("extract", "omni", "--base", BASE, "--patches", patches)
    assert changed.exit_code == 0, changed.stderr
    assert "wrote 2 files" in changed.stderr
    assert linked.is_symlink() and index.is_symlink()
    assert kept.read_text() == right, "rewritten through the link, the title kept"
    assert "source-sha256: stale" not in index_kept.read_text()
    assert cli("extract", "omni", "--base", BASE, "--patches", patches, "--check").exit_code == 0


SIGINT_WHILE_IMPORTING = """
import os, signal, sys

class CtrlC:
    '''A real Ctrl-C while the command line's modules are imported (click first).'''
    def find_spec(self, name, path, target=None):
        if name == "click":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["omni-port", "codes"]
from omni_port.__main__ import main
main()
"""


def _python(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run by a Python process of its own in ``cwd``, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_ctrl_c_while_the_command_line_loads_exits_130(tmp_path: Path) -> None:
    """The first ~0.15 s of every run import click and the commands: a Ctrl-C there was a
    traceback and exit 1 (read by `make sync` as findings)."""
    done = _python(SIGINT_WHILE_IMPORTING, tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "interrupted" in done.stderr


def test_the_console_script_is_the_entry_that_handles_ctrl_c() -> None:
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "omni-port"]
    assert script.value == "omni_port.__main__:main"


FULL_COLLECTIONS = """
import atexit, gc, sys
young, middle, _ = gc.get_threshold()
atexit.register(lambda: print(young, middle, *gc.get_threshold()))
sys.argv = ["omni-port", "codes"]
from omni_port.__main__ import main
main()
"""


def test_a_command_holds_back_full_collections_and_keeps_the_young_ones(
    tmp_path: Path,
) -> None:
    """A command keeps its trees until it ends: CPython's full collections walked them 16
    times in a warm GPU upgrade (2 s of its 9 s of CPU). The process runs with the oldest
    generation collected after FULL_COLLECTION_AFTER middle ones (10 before), the younger
    generations as they were."""
    from omni_port.__main__ import FULL_COLLECTION_AFTER

    done = _python(FULL_COLLECTIONS, tmp_path)
    assert done.returncode == 0, done.stderr
    young, middle, *now = map(int, done.stdout.split()[-5:])
    assert now == [young, middle, FULL_COLLECTION_AFTER] and FULL_COLLECTION_AFTER >= 100


LONG_OUTPUT = """
import click
from omni_port.cli import handle_errors

@click.command()
@handle_errors
def many() -> None:
    for number in range(200_000):
        click.echo(f"line {number} of a report nobody reads to the end")

many()
"""


def test_a_reader_that_stops_early_ends_the_run_quietly_with_141(tmp_path: Path) -> None:
    """`omni-port bases | head`: the reader goes away after a line. That is no internal
    error (123 and a traceback, as it was): exit 141, as a process SIGPIPE stops, and
    nothing on stderr."""
    with subprocess.Popen(
        [sys.executable, "-c", LONG_OUTPUT],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(b"line 0 ")
        process.stdout.close()
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=60) == 141, stderr
    assert stderr == "", stderr
