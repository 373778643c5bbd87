"""What omni-port must never do: pass what it did not check, or lose a maintainer's decision.

Each section is a way a new user found to make it do one or the other (bad input, faults,
partial runs); the tests assert codes, lines and exit codes, never prose.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from omni_port import cli as cli_module
from tests.conftest import Cli
from tests.golden import DATA

# --- Ctrl-C is 130 everywhere -----------------------------------------------------------------


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("target", "attribute"),
    [
        pytest.param(cli_module, "load", id="while-reading-the-configuration"),
        pytest.param(cli_module.importlib, "import_module", id="while-importing-the-command"),
    ],
)
def test_ctrl_c_before_the_command_runs_exits_130(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, target: object, attribute: str
) -> None:
    monkeypatch.setattr(target, attribute, _interrupt)
    result = cli.loud("check", "--no-cache")
    assert result.exit_code == 130
    assert "Aborted!" not in result.stderr and "interrupted" in result.stderr


SIGINT_EARLY = """
import os, signal, sys
from omni_port import cli

def load(path):
    os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, while the configuration is read
    signal.pause()

cli.load = load
sys.argv = ["omni-port", *sys.argv[1:]]
cli.run()
"""


def _as_from_a_terminal() -> None:
    """SIGINT as a terminal's foreground process has it: a suite run as a background job
    (`make test &`, nohup) starts children with SIGINT ignored, and Python then installs no
    KeyboardInterrupt handler, so the child would wait out the timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_real_sigint_early_in_a_command_exits_130(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SIGINT_EARLY, "check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OMNI_PORT_CACHE": str(tmp_path / "cache")},
        preexec_fn=_as_from_a_terminal,
    )
    # 130 is 128 + SIGINT, what a shell reports for Ctrl-C; `make sync` fails on it.
    assert done.returncode == 130, done.stderr
    assert "Aborted!" not in done.stderr


# --- the configuration is validated where it is read ------------------------------------------

CONFIG = """\
[project]
name = "host"

[tool.omni-port]
source = "runner.py"
upstream = "base.py"
"""


def _workspace(tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("config", "where"),
    [
        pytest.param(
            CONFIG.replace("[tool.omni-port]", "[tool.omni-port"), ":4:16: OP005", id="no-bracket"
        ),
        pytest.param(CONFIG + 'history = "sometimes"\n', ":7:1: OP005", id="history-sometimes"),
        pytest.param(CONFIG + "history = 1\n", ":7:1: OP005", id="history-not-a-string"),
        pytest.param(CONFIG + 'patches = ""\n', ":7:1: OP005", id="empty-patches"),
        pytest.param(CONFIG + 'upstream-class = "a.b"\n', ":7:1: OP005", id="class-not-a-name"),
        pytest.param(CONFIG.replace("upstream =", "upstraem ="), ":6:1: OP005", id="unknown-key"),
        pytest.param(
            CONFIG + 'base = "vllm-ascend==notaversion"\n', ":7:1: OP005", id="pin-of-no-version"
        ),
        pytest.param(CONFIG + "lenient = true\n", ":7:1: OP005", id="lenient-accepts-nothing"),
        pytest.param(
            CONFIG + 'base = "vllm-ascend===0.30.0"\n', ":7:1: OP005", id="pin-of-three-equals"
        ),
        pytest.param(
            CONFIG.replace('"base.py"', '"vllm-ascend>=0.26"'), ":6:1: OP005", id="pin-of-a-range"
        ),
        pytest.param(CONFIG + 'base = "vllm-ascend~=0.30"\n', ":7:1: OP005", id="pin-compatible"),
        pytest.param(CONFIG + 'base = "vllm-ascend=="\n', ":7:1: OP005", id="pin-of-nothing"),
    ],
)
@pytest.mark.parametrize("command", ["extract", "check", "sync", "catalog"])
def test_a_bad_configuration_is_exit_2_at_its_line_and_nothing_is_written(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    where: str,
    command: str,
) -> None:
    workspace = _workspace(tmp_path, config, monkeypatch)
    result = cli(command)
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith(f"pyproject.toml{where} ")
    assert sorted(p.name for p in workspace.iterdir()) == ["pyproject.toml", "tests"]


def test_a_bad_configuration_is_found_from_a_subdirectory(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = CONFIG.replace("[tool.omni-port]", "[tool.omni-port")
    workspace = _workspace(tmp_path, broken, monkeypatch)
    monkeypatch.chdir(workspace / "tests")
    result = cli("check", "--no-cache")
    assert result.exit_code == 2
    assert re.match(r"\S*pyproject\.toml:4:16: OP005 ", _one_line(result.stderr))


def test_a_pyproject_of_another_tool_is_passed_over(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken TOML that does not mention omni-port is someone else's: not our configuration."""
    (tmp_path / "pyproject.toml").write_text("[tool.black\n")
    monkeypatch.chdir(tmp_path)
    assert cli("codes").exit_code == 0


@pytest.mark.parametrize(
    "command",
    [
        ("extract", "runner.py", "--base", "base.py"),
        ("sync", "--upstream", "base.py"),
        ("resolve", "omni.R.sample.block-01", "--at", "#1"),
        ("continue",),
        ("adopt", "omni.R.forward.edit-01"),
        ("v2-sync", "runner.py"),
    ],
    ids=lambda command: command[0],
)
def test_without_a_configuration_a_command_that_writes_the_workspace_refuses(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """Its inputs would be the built-in defaults, releases nobody chose, and what it wrote
    would be found by no later command run from anywhere else: exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    result = cli(*command)
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith("pyproject.toml:0:1: OP005 ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [("check", "--no-cache"), ("verify",), ("catalog", "--patches", "p"), ("bases", "x.py")],
    ids=lambda command: command[0],
)
def test_without_a_configuration_a_command_says_once_which_defaults_it_takes(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """Even with -q: the defaults name releases, the inputs of the run."""
    monkeypatch.chdir(tmp_path)
    result = cli(*command)
    said = [line for line in result.stderr.splitlines() if "[tool.omni-port]" in line]
    assert len(said) == 1 and said[0].startswith("omni-port: warning: "), result.stderr
    assert 'source = "vllm-omni==' in said[0] and "omni-port init" in said[0]
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    assert "[tool.omni-port]" not in cli(*command).stderr
    assert "[tool.omni-port]" not in cli("codes").stderr


def test_an_explicit_configuration_without_the_table_is_exit_2(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "other.toml"
    config.write_text("[tool.black]\nline-length = 100\n")
    result = cli("--config", config, "codes")
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith(f"{config}:1:1: OP005 ")


# --- patch files are validated where they are read --------------------------------------------

#: tests/data/upgrade: on v2.py the marked block of R.sample is a conflict, the implicit
#: edit of R.forward is placed.
UPGRADE = """\
[tool.omni-port]
source = "omni.py"
base = "v1.py"
upstream = "v2.py"
patches = "p"
generated = "g"
"""
CONFLICT = "omni.R.sample.block-01"
PLACED = "omni.R.forward.edit-01"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    """The upgrade workspace, extracted and synced onto v2.py (one conflict)."""
    for name in ("v1.py", "v2.py", "v3.py", "omni.py"):
        shutil.copy(DATA / "upgrade" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(UPGRADE)
    monkeypatch.chdir(tmp_path)
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    return tmp_path


def _patch(work: Path, block_id: str) -> Path:
    return work / "p" / "omni" / (block_id.removeprefix("omni.") + ".patch")


def _code_line(path: Path, n: int = 1) -> int:
    """The line of the n-th line of a patch file's code."""
    return path.read_text().split("\n").index("---") + 1 + n


def _first_line(stderr: str) -> str:
    assert stderr and "Traceback" not in stderr, stderr
    return stderr.splitlines()[0]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("block_id", [CONFLICT, PLACED])
@pytest.mark.parametrize("command", [("sync",), ("resolve", CONFLICT, "--at", "#1"), ("catalog",)])
def test_a_patch_whose_code_does_not_parse_is_exit_2_at_its_line(
    cli: Cli, work: Path, block_id: str, command: tuple[str, ...]
) -> None:
    patch = _patch(work, block_id)
    patch.write_text(patch.read_text() + "x = (\n")
    lines = patch.read_text().split("\n")
    before = _tree(work)
    result = cli(*command)
    assert result.exit_code == 2
    assert _first_line(result.stderr).startswith(f"p/omni/{patch.name}:{len(lines) - 1}:5: OP002 ")
    assert _tree(work) == before


@pytest.mark.parametrize(
    ("kind_line", "code"),
    [
        pytest.param("kind: header", "if batch and:", id="header"),
        pytest.param("kind: signature", "def forward(self, batch:", id="signature"),
    ],
)
def test_a_header_edit_that_does_not_parse_is_exit_2(
    cli: Cli, work: Path, kind_line: str, code: str
) -> None:
    patch = _patch(work, PLACED)
    head, _, _ = patch.read_text().partition("\n---\n")
    head = re.sub(r"^kind: .*$", kind_line, head, flags=re.MULTILINE)
    patch.write_text(f"{head}\n---\n{code}\n")
    result = cli("sync")
    assert result.exit_code == 2
    assert _first_line(result.stderr).startswith(f"p/omni/{patch.name}:{_code_line(patch)}:")
    assert " OP002 " in _first_line(result.stderr)


def test_two_patch_files_with_one_id_are_exit_2_naming_both(cli: Cli, work: Path) -> None:
    original = _patch(work, PLACED)
    twin = original.with_name("R.forward.edit-02.patch")
    shutil.copy(original, twin)
    index = work / "p" / "omni-port.index"
    index.write_text(
        index.read_text().replace(
            "piece: omni/R.forward.edit-01.patch\n",
            "piece: omni/R.forward.edit-01.patch\npiece: omni/R.forward.edit-02.patch\n",
        )
    )
    before = _tree(work)
    for command in (("sync",), ("check", "--no-cache"), ("catalog",)):
        result = cli(*command)
        assert result.exit_code == 2, command
        line = _first_line(result.stderr)
        assert line.startswith(f"p/omni/{twin.name}:2:1: OP201 ")
        assert f" p/omni/{original.name};" in line, "the other file, as the first is shown"
    assert _tree(work) == before


@pytest.mark.parametrize(
    ("field", "value"), [("member", "no_such_method"), ("owner", "NoSuchClass")]
)
def test_a_block_of_a_member_the_module_does_not_copy_is_exit_2(
    cli: Cli, work: Path, field: str, value: str
) -> None:
    patch = _patch(work, PLACED)
    text = patch.read_text()
    patch.write_text(re.sub(rf"^{field}: .*$", f"{field}: {value}", text, flags=re.MULTILINE))
    number = text.split("\n").index(next(x for x in text.split("\n") if x.startswith(field)))
    result = cli("sync")
    assert result.exit_code == 2
    assert _first_line(result.stderr).startswith(f"p/omni/{patch.name}:{number + 1}:1: OP201 ")


def test_extract_replaces_code_that_does_not_parse_and_keeps_the_decisions(
    cli: Cli, work: Path
) -> None:
    assert cli("resolve", CONFLICT, "--at", "#2").exit_code == 0
    patch = _patch(work, CONFLICT)
    resolved = patch.read_text()
    patch.write_text(resolved.replace("title: ", "title: Talker hook (renamed) ") + "x = (\n")
    assert cli("extract").exit_code == 0
    assert patch.read_text() == resolved.replace("title: ", "title: Talker hook (renamed) ")
    assert cli("sync").exit_code == 0


def test_extract_refuses_to_write_over_a_decision_it_cannot_read(cli: Cli, work: Path) -> None:
    assert cli("resolve", CONFLICT, "--at", "#2").exit_code == 0
    patch = _patch(work, CONFLICT)
    text = patch.read_text()
    number = next(i for i, x in enumerate(text.split("\n"), 1) if x.startswith("resolved-after"))
    patch.write_text(text.replace("resolved-after: ", "resolved-after:: "))  # not JSON now
    before = _tree(work)
    result = cli("extract")
    assert result.exit_code == 2
    assert _first_line(result.stderr).startswith(f"p/omni/{patch.name}:{number}:1: OP201 ")
    assert _tree(work) == before


# --- lock files: one line naming the file and what is wrong -----------------------------------


def _outputs_a_list(lock: Path) -> tuple[bytes, str]:
    """The real lock with ``outputs`` a list, and where that is said."""
    data = json.loads(lock.read_text())
    data["outputs"] = list(data["outputs"])
    text = json.dumps(data, indent=2, sort_keys=True)
    line = next(n for n, row in enumerate(text.split("\n"), 1) if row.startswith('  "outputs"'))
    return text.encode(), f":{line}:1: OP201"


@pytest.mark.parametrize(
    ("content", "where", "named"),
    [
        pytest.param(b'{"tool": "x",\n  "inputs": }\n', ":2:13: OP201", "JSON", id="not-json"),
        pytest.param(b'{"tool": "omni-port"}\n', ":1:1: OP201", "'inputs'", id="no-inputs"),
        pytest.param(None, "", "'outputs'", id="outputs-not-an-object"),
        pytest.param(b"[1, 2]\n", ":1:1: OP201", "document", id="not-an-object"),
        pytest.param(b"\xff\xfe{}\n", ":1:1: OP001", "UTF-8", id="not-utf8"),
    ],
)
@pytest.mark.parametrize("command", [("verify",), ("check", "--no-cache")])
def test_a_broken_lock_is_one_line_naming_what_is_wrong(
    cli: Cli, work: Path, content: bytes | None, where: str, named: str, command: tuple[str, ...]
) -> None:
    lock = work / "g" / "omni-port.lock"
    if content is None:
        content, where = _outputs_a_list(lock)
    lock.write_bytes(content)
    result = cli(*command)
    assert result.exit_code == 2
    line = _one_line(result.stderr)
    assert line.startswith(f"g/omni-port.lock{where} ") and named in line
    assert not re.search(r": '?\w+'?$", line), "a bare key is exception text, not a reason"


# --- a gate that cannot check fails -----------------------------------------------------------


def _diagnostics(stdout: str) -> list[tuple[str, str]]:
    """(``path:line``, code) of every diagnostic line on stdout but the notes on implicit
    edits (OP407)."""
    found = []
    for line in stdout.splitlines():
        where, _, rest = line.partition(": ")
        if rest[:2] == "OP" and where.count(":") == 2:
            found.append((where.rsplit(":", 1)[0], rest.split()[0]))
    return [d for d in found if d[1] != "OP407"]


def _lock_line(lock: Path, block_id: str) -> int:
    rows = lock.read_text().split("\n")
    return next(n for n, row in enumerate(rows, 1) if f'"id": "{block_id}"' in row)


@pytest.mark.parametrize(
    "generated",
    [
        pytest.param("/nonexistent", id="nonexistent"),
        pytest.param("empty", id="empty-directory"),
    ],
)
def test_check_with_nothing_generated_fails_in_one_line(
    cli: Cli, work: Path, generated: str
) -> None:
    (work / "empty").mkdir()
    result = cli("check", "--no-cache", "--generated", generated)
    assert result.exit_code == 1
    gate = [d for d in _diagnostics(result.stdout) if d[1] == "OP311"]
    # The folder as the flag gave it: the missing lock is no file an editor could open.
    assert gate == [(f"{generated.rstrip('/')}/:0", "OP311")]


def test_check_with_nothing_extracted_fails_and_keeps_the_locks_conflicts(
    cli: Cli, work: Path
) -> None:
    """A fresh clone of a repository that commits its lock: nothing extracted, and the lock
    lists a conflict. Both fail the gate; nothing can be regenerated."""
    shutil.rmtree(work / "p")
    lock = work / "g" / "omni-port.lock"
    result = cli("check", "--no-cache")
    assert result.exit_code == 1
    assert _diagnostics(result.stdout) == [
        ("pyproject.toml:5", "OP311"),  # patches = "p"
        (f"g/omni-port.lock:{_lock_line(lock, CONFLICT)}", "OP310"),
    ]


def test_check_in_an_empty_workspace_fails(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("v1.py", "v2.py", "omni.py"):
        shutil.copy(DATA / "upgrade" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(UPGRADE)
    monkeypatch.chdir(tmp_path)
    result = cli("check", "--no-cache")
    assert result.exit_code == 1
    # Each at the line of the configuration that names the empty folder: nothing else
    # there is a file to open (OP311 pointed at the index and the lock, which do not exist).
    assert _diagnostics(result.stdout) == [
        ("pyproject.toml:5", "OP311"),
        ("pyproject.toml:6", "OP311"),
    ]
    assert "nothing extracted in p/ (no omni-port.index)" in result.stdout
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    assert cli("resolve", CONFLICT, "--at", "#2").exit_code == 0
    assert cli("sync").exit_code == 0
    assert cli("check", "--no-cache").exit_code == 0, "the gate passes what it checked"


@pytest.mark.real
def test_check_on_a_fresh_clone_of_this_repository_fails(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    """What a clone holds: the configuration and the committed lock (its conflicts), no
    patches and no generated runners. The gate says nothing was extracted, lists the lock's
    conflicts, and finds the configured V2 tree's modules missing (only its lock is
    committed)."""
    root = Path(__file__).resolve().parent.parent
    for name in ("pyproject.toml", "marker-allow.txt", "v2-allow.txt"):
        shutil.copy(root / name, tmp_path / name)
    # Only what git tracks under generated/, whatever a `make sync` left in this checkout.
    tracked = subprocess.run(
        ["git", "ls-files", "generated"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in tracked:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    lock = json.loads((tmp_path / "generated" / "omni-port.lock").read_text())
    conflicts = [row for row in lock["placements"] if row["status"] == "conflict"]
    result = cli("--cache-dir", cache_dir, "check", "--no-cache")
    assert result.exit_code == 1
    found = _diagnostics(result.stdout)
    codes = [code for _, code in found if code != "OP406"]
    # The default source's lost marker is a note (`marker-allow.txt` lists it), listed first.
    assert codes == ["OP102", "OP311"] + ["OP310"] * len(conflicts)
    missing = {where.rsplit(":", 1)[0] for where, code in found if code == "OP406"}
    assert missing, "the V2 modules are not committed"
    assert all(path.startswith("generated/v2/") for path in missing), missing
    assert "generated/v2/omni-port.lock" not in missing, "the committed V2 lock is current"
    assert conflicts, "the committed lock lists conflicts"


# --- extract never removes what it did not read -------------------------------------------------


def test_extracting_one_runner_rewrites_its_modules_patches_only(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    patches = tmp_path / "p"
    base = ("--base", "upstream/v1/model_runner_v1.py", "--patches", patches)
    assert cli("extract", "omni", *base).exit_code == 0
    others = [patches / "npu_ar_model_runner", patches / "npu_generation_model_runner"]
    titled = next(others[0].glob("*.block-01.patch"))
    titled.write_text(titled.read_text().replace("title: ", "title: Reviewed: ", 1))
    kept = {folder.name: _tree(folder) for folder in others}
    index = (patches / "omni-port.index").read_text()
    result = cli.loud("extract", "omni/npu_model_runner.py", *base)
    assert result.exit_code == 0
    assert {folder.name: _tree(folder) for folder in others} == kept
    assert (patches / "omni-port.index").read_text().count("module: ") == index.count("module: ")
    assert "removed 0" in result.stderr or "patches unchanged" in result.stderr
    assert "Reviewed: " in titled.read_text()
    assert cli("extract", "omni", *base, "--check").exit_code == 0, "all current, title kept"


def test_a_resolution_survives_extracting_another_runner(cli: Cli, work: Path) -> None:
    """The configured source is one file here; a second runner extracted by name must not
    take the first one's resolution with it (nor the other way round)."""
    assert cli("resolve", CONFLICT, "--at", "#2").exit_code == 0
    resolved = _patch(work, CONFLICT).read_text()
    other = work / "other"
    other.mkdir()
    shutil.copy(work / "omni.py", other / "npu_model_runner.py")
    assert cli("extract", "other/npu_model_runner.py").exit_code == 0
    assert _patch(work, CONFLICT).read_text() == resolved
    assert "module: npu_model_runner.py" in (work / "p" / "omni-port.index").read_text()
    assert cli("extract", "omni.py").exit_code == 0
    assert _patch(work, CONFLICT).read_text() == resolved
    assert (work / "p" / "npu_model_runner").is_dir(), "not read this time: kept"
    assert cli("sync").exit_code == 1, "the other module's own conflict"
    rows = json.loads((work / "g" / "omni-port.lock").read_text())["placements"]
    assert [r["status"] for r in rows if r["id"] == CONFLICT] == ["placed"]
    kept = _tree(work / "p" / "npu_model_runner")
    upgraded = cli("upgrade", "omni.py", "--to", "v3.py", "--summary", "upgrade.md")
    assert upgraded.exit_code in (0, 1), upgraded.stderr
    assert _tree(work / "p" / "npu_model_runner") == kept, "upgrade of one runner: the same"


# --- titles, ids and resolutions stay with their code -----------------------------------------


def test_an_edit_keeps_its_id_title_and_resolution_when_an_edit_appears_before_it(
    cli: Cli, work: Path
) -> None:
    forward = _patch(work, PLACED)
    # A title and a resolution a maintainer wrote (by hand: the edit is no conflict).
    edited = forward.read_text().replace("title: ", "title: Stats; ", 1)
    forward.write_text(edited.replace("\n---\n", "\nresolved-after: self.run(batch)\n---\n", 1))
    code = forward.read_text().partition("\n---\n")[2]
    runner = work / "omni.py"
    runner.write_text(runner.read_text().replace("self.prepare(batch)", "self.prepare(batch, 1)"))
    assert cli("extract").exit_code == 0
    edits = sorted(p.name for p in forward.parent.glob("R.forward.edit-*.patch"))
    assert edits == ["R.forward.edit-01.patch", "R.forward.edit-02.patch"]
    kept_head, _, kept_code = forward.read_text().partition("\n---\n")
    assert kept_code == code, "edit-01 is still its edit"
    assert "title: Stats; " in kept_head and "resolved-after: " in kept_head
    added = forward.with_name("R.forward.edit-02.patch").read_text()
    assert "self.prepare(batch, 1)" in added and "Stats; " not in added
    assert "resolved-after" not in added
    assert cli("extract", "--check").exit_code == 0, "a second extract changes nothing"


@pytest.mark.real
def test_implicit_edit_titles_follow_their_code_when_the_base_changes(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    """The issue's case: extract against vllm-ascend 0.18.0, then against the configured
    base. Every edit keeps the title its code has in a clean extraction, and check finds
    the patches current."""
    root = Path(__file__).resolve().parent.parent
    for name in ("pyproject.toml", "marker-allow.txt", "v2-allow.txt"):
        shutil.copy(root / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    cached = ("--cache-dir", cache_dir)
    assert cli(*cached, "extract", "--base", "vllm-ascend==0.18.0").exit_code == 0
    assert cli(*cached, "extract").exit_code == 0
    assert cli(*cached, "extract", "--patches", "clean").exit_code == 0

    def titles(folder: Path) -> dict[str, str]:
        found = {}
        for path in folder.glob("*/*.edit-*.patch"):
            head, _, code = path.read_text().partition("\n---\n")
            owner = re.search(r"^id: (.*)\.edit-\d+$", head, re.MULTILINE)
            title = re.search(r"^title: (.*)$", head, re.MULTILINE)
            assert owner is not None and title is not None
            found[f"{owner[1]}\n{code}"] = title[1]
        return found

    assert titles(tmp_path / "patches") == titles(tmp_path / "clean")
    checked = cli(*cached, "check", "--no-cache", "--format", "json")
    stale = [
        row for row in map(json.loads, checked.stdout.splitlines()) if "patches/" in row["path"]
    ]
    assert stale == []


# --- resolve of a placed block, catalog --check without a catalog ---------------------------


def test_resolve_of_a_placed_block_is_exit_2_naming_its_place(cli: Cli, work: Path) -> None:
    before = _tree(work)
    result = cli("resolve", PLACED, "--at", "#1")
    assert result.exit_code == 2
    line = _one_line(result.stderr)
    assert line.startswith(f"p/omni/{_patch(work, PLACED).name}:2:1: OP005 ")
    placed = json.loads((work / "g" / "omni-port.lock").read_text())["placements"]
    start = next(row["lines"][0] for row in placed if row["id"] == PLACED)
    assert f"g/omni.py:{start} " in line
    assert _tree(work) == before


def test_resolve_of_a_conflict_and_again_of_the_resolved_block(cli: Cli, work: Path) -> None:
    assert cli("resolve", CONFLICT, "--at", "#2").exit_code == 0
    assert cli("sync").exit_code == 0
    assert cli("resolve", CONFLICT, "--at", "#1").exit_code == 0, "a maintainer may change it"


def test_resolve_without_a_lock_of_that_upstream_asks_the_anchor(cli: Cli, work: Path) -> None:
    shutil.rmtree(work / "g")
    assert cli("resolve", PLACED, "--at", "#1").exit_code == 2
    assert cli("resolve", CONFLICT, "--at", "#2").exit_code == 0


def test_catalog_check_without_a_catalog_is_exit_2(cli: Cli, work: Path) -> None:
    before = _tree(work)
    result = cli("catalog", "--check")
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith("pyproject.toml:1:1: OP005 ")
    assert _tree(work) == before
    assert cli("catalog", "--check", "--out", "-").exit_code == 2
    assert cli("catalog", "--out", "catalog.md").exit_code == 0
    assert cli("catalog", "--check", "--out", "catalog.md").exit_code == 0


# --- bases with nothing to compare; a device named as an input ----------------------------------


def test_bases_of_runners_with_no_copied_statement_is_exit_2(cli: Cli, work: Path) -> None:
    (work / "empty.py").write_text("")
    result = cli("bases", "empty.py", "--candidates", "v1.py,v2.py")
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith("empty.py:1:1: OP004 ")
    assert result.stdout == "", "no ranking of nothing"
    ranked = cli("bases", "omni.py", "--candidates", "v1.py,v2.py")
    assert ranked.exit_code == 0 and ranked.stdout.splitlines()[0].startswith("v1.py\t")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("extract", "/dev/null"), id="extract"),
        pytest.param(("check", "/dev/null", "--no-cache"), id="check"),
        pytest.param(("bases", "/dev/null", "--candidates", "v1.py"), id="bases"),
        pytest.param(("extract", "--base", "/dev/null"), id="extract-base"),
        pytest.param(("sync", "--upstream", "/dev/null"), id="sync-upstream"),
        pytest.param(("gpu-delta", "/dev/null"), id="gpu-delta"),
        pytest.param(
            ("upgrade", "/dev/null", "--base", "v1.py", "--to", "v2.py"), id="upgrade-source"
        ),
        pytest.param(
            ("upgrade", "omni.py", "--base", "v1.py", "--to", "/dev/null"), id="upgrade-to"
        ),
    ],
)
def test_a_device_is_not_called_a_missing_file(cli: Cli, work: Path, args: tuple[str, ...]) -> None:
    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null here")
    before = _tree(work)
    result = cli(*args)
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith("/dev/null:1:1: OP001 ")
    assert _tree(work) == before


@pytest.mark.parametrize(
    ("args", "dist"),
    [
        pytest.param(("sync", "--upstream", "numpy==1.26.0"), "vllm-ascend", id="sync-upstream"),
        pytest.param(("extract", "numpy==1.26.0", "--base", "v1.py"), "vllm-omni", id="extract"),
        pytest.param(("extract", "omni.py", "--base", "torch==2.5.1"), "vllm-ascend", id="base"),
    ],
)
def test_another_project_s_release_is_refused_before_any_download(
    cli: Cli, work: Path, args: tuple[str, ...], dist: str, tmp_path: Path
) -> None:
    """`--upstream numpy==1.26.0` used to download numpy's wheel and then find no runner
    in it: the project is checked first (names compared as the index does)."""
    cache = tmp_path / "cache"
    before = _tree(work)
    result = cli("--cache-dir", cache, *args)
    assert result.exit_code == 2
    spec = next(a for a in args if "==" in a)
    assert _one_line(result.stderr) == (
        f"{spec}:0:1: OP003 not a {dist} release: give {dist}==VERSION, a version, a path "
        "or installed"
    )
    assert _tree(work) == before and not cache.exists()
