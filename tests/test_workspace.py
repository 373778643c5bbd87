"""Nothing a maintainer does is lost: a hand edit of a generated runner survives every
command until `continue` takes it or `--discard-edits` drops it (a copy kept); a command's
writes are one transaction (all or nothing, a killed run completed or rolled back by the
next command); one writer at a time.

On the synthetic upgrade of tests/data/loop (base -> new), as tests/test_loop.py walks it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.crash import KILLED_AT
from omni_port.api import writing
from omni_port.model import Code
from omni_port.sources import transaction
from tests.conftest import Cli
from tests.golden import DATA
from tests.test_loop import CONFIG, _edit

RUNNER = Path("g") / "omni.py"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    """The loop's workspace after `make sync` on its base and the upgrade onto new.py, and
    the maintainer's edit of its conflict regions in the generated runner."""
    for name in ("base.py", "new.py", "omni.py"):
        shutil.copy(DATA / "loop" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMNI_PORT_LOCK_WAIT", "0.3")
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    assert cli("upgrade", "--to", "new.py", "--summary", "up.md").exit_code == 1
    _edit(tmp_path)
    return tmp_path


def _tree(root: Path) -> dict[str, bytes]:
    """Every file of the workspace but the tool's own state (its lock, a journal)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and transaction.STATE_DIR not in p.relative_to(root).parts
    }


def _edited_lines(work: Path) -> list[int]:
    """The lines of the runner the maintainer's edit wrote (what `continue` would take)."""
    return [
        number
        for number, line in enumerate((work / RUNNER).read_text().splitlines(), start=1)
        if "omni_scale" in line or "record_omni_stats" in line or "k=1" in line
    ]


# --- hand edits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("sync",),
        ("upgrade", "--to", "new.py", "--summary", "up.md"),
        ("extract",),
        ("verify",),
        ("check", "--no-cache"),
        ("catalog", "--out", "catalog.md"),
    ],
    ids=lambda c: c[0],
)
def test_a_hand_edit_survives_every_command(cli: Cli, work: Path, command: tuple[str, ...]) -> None:
    """`make sync` and `upgrade` are where it was lost; the gates name it."""
    edited = (work / RUNNER).read_bytes()
    result = cli(*command)
    assert (work / RUNNER).read_bytes() == edited
    if command[0] in ("sync", "upgrade"):
        assert result.exit_code == 2, result.stderr
        first = _edited_lines(work)[0]
        assert result.stderr.startswith(f"{RUNNER}:{first}:1: OP207 "), result.stderr
        assert "omni-port continue" in result.stderr and "--discard-edits" in result.stderr
    if command[0] in ("verify", "check"):
        assert result.exit_code == 1
        rows = [line for line in result.stdout.splitlines() if " OP207 " in line]
        assert len(rows) == 1 and rows[0].startswith(f"{RUNNER}:"), result.stdout
        assert "omni-port continue" in rows[0]


def test_a_refused_sync_names_every_edited_region_and_writes_nothing(cli: Cli, work: Path) -> None:
    before = _tree(work)
    refused = cli("sync")
    assert refused.exit_code == 2
    (line,) = refused.stderr.splitlines()
    regions = line.split("(lines ", 1)[1].split(")", 1)[0].split(", ")
    covered = {n for r in regions for n in range(int(r.split("-")[0]), int(r.split("-")[-1]) + 1)}
    assert set(_edited_lines(work)) <= covered
    assert _tree(work) == before


def test_continue_takes_the_edits_and_sync_then_writes_again(cli: Cli, work: Path) -> None:
    assert cli("continue", "--why", "reviewed").exit_code == 0
    assert cli("sync").exit_code == 0
    assert cli("check", "--no-cache").exit_code == 0


def test_discard_edits_drops_them_and_keeps_a_copy(cli: Cli, work: Path) -> None:
    edited = (work / RUNNER).read_bytes()
    dropped = cli.loud("sync", "--discard-edits")
    assert dropped.exit_code == 1, dropped.stderr  # the conflicts are back
    assert (work / RUNNER).read_bytes() != edited
    (copy,) = (work / transaction.STATE_DIR / "discarded").rglob("omni.py")
    assert copy.read_bytes() == edited
    assert copy.relative_to(work).as_posix() in dropped.stderr
    assert cli("sync").exit_code == 1, "nothing edited any more: sync writes"


def test_a_stale_runner_says_sync_and_an_edited_one_continue(cli: Cli, work: Path) -> None:
    """An upstream that changed since the last sync makes a runner stale (OP406: sync),
    not edited: it holds what sync wrote."""
    assert cli("continue", "--why", "reviewed").exit_code == 0
    upstream = work / "new.py"
    upstream.write_text(upstream.read_text().replace("self.run(ids)", "self.run(ids, 1)"))
    checked = cli("check", "--no-cache")
    rows = [line for line in checked.stdout.splitlines() if " OP406 " in line or " OP207 " in line]
    stale = [row for row in rows if row.startswith(f"{RUNNER}:")]
    assert [row.split(": ")[1].split()[0] for row in stale] == ["OP406"], checked.stdout
    assert "omni-port sync" in stale[0] and not [row for row in rows if " OP207 " in row]
    assert cli("sync").exit_code == 0, "a stale runner is no hand edit: sync writes it"


def test_the_runtime_says_continue_for_a_hand_edit(work: Path) -> None:
    from omni_port import runtime

    reasons = runtime.unresolved(work / "g")
    (edited,) = [reason for reason in reasons if reason.startswith("omni.py ")]
    assert "omni-port continue" in edited and "sync`" not in edited.split("(")[0]


# --- transactions -----------------------------------------------------------------------------


def _failing_in(folder: Path, real: Callable[..., Any]) -> Callable[..., Any]:
    """``tempfile.mkstemp`` refusing to stage a file in ``folder`` (a read-only folder)."""

    def fake(*args: Any, **kwargs: Any) -> Any:
        if Path(os.path.abspath(kwargs.get("dir", ""))) == folder:
            raise PermissionError(13, "Permission denied")
        return real(*args, **kwargs)

    return fake


def test_an_upgrade_that_cannot_write_the_configuration_publishes_nothing(
    cli: Cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to replace the patches, the runners and the summary, then fail on the
    configuration."""
    assert cli("continue", "--why", "reviewed").exit_code == 0
    (work / "newer.py").write_text((work / "new.py").read_text().replace("k=2", "k=3"))
    before = _tree(work)
    monkeypatch.setattr(tempfile, "mkstemp", _failing_in(work, tempfile.mkstemp))
    failed = cli("upgrade", "--to", "newer.py", "--summary", "up.md")
    assert failed.exit_code == 2
    (line,) = failed.stderr.splitlines()
    assert line.split(":")[0] in ("pyproject.toml", "up.md") and ": OP006 " in line, line
    assert _tree(work) == before
    assert not list(work.rglob("*.tmp"))
    assert not (work / transaction.STATE_DIR / transaction.JOURNAL_NAME).exists()


def _upgraded_elsewhere(work: Path, tmp_path: Path, cli: Cli) -> dict[str, bytes]:
    """What the upgrade onto newer.py writes when nothing stops it (in a copy)."""
    other = tmp_path / "other"
    shutil.copytree(work, other, ignore=shutil.ignore_patterns(transaction.STATE_DIR))
    os.chdir(other)
    try:
        assert cli("upgrade", "--to", "newer.py", "--summary", "up.md").exit_code == 1
        return _tree(other)
    finally:
        os.chdir(work)


def test_an_upgrade_killed_at_any_step_is_completed_or_rolled_back_by_the_next_command(
    cli: Cli, work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """SIGKILL at every write step of an upgrade, one run each: the next command finds the
    workspace as it was before, or finishes it; never a mix, never a temp file left."""
    assert cli("continue", "--why", "reviewed").exit_code == 0
    (work / "newer.py").write_text(
        (work / "new.py").read_text().replace("self.prepare_sampler()", "self.prepare_sampler(1)")
    )
    before = _tree(work)
    after = _upgraded_elsewhere(work, tmp_path_factory.mktemp("upgraded"), cli)
    assert after != before
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    upgrade = ["-q", "upgrade", "--to", "newer.py", "--summary", "up.md"]
    seen = []
    snapshot = tmp_path_factory.mktemp("before") / "work"
    shutil.copytree(work, snapshot)
    for at in range(1, 100):
        os.chdir(snapshot.parent)
        shutil.rmtree(work)
        shutil.copytree(snapshot, work)
        os.chdir(work)
        killed = subprocess.run(
            [sys.executable, "-c", KILLED_AT, str(at), *upgrade],
            cwd=work,
            capture_output=True,
            env=env,
        )
        if killed.returncode in (0, 1):
            assert _tree(work) == after
            break
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        said = cli("extract", "--check").stderr
        state = _tree(work)
        assert state in (before, after), f"killed at step {at}: a mixed workspace"
        assert not list(work.rglob("*.tmp")), f"killed at step {at}: temp files left"
        recovery = "completed" if "completed the interrupted" in said else "rolled back"
        seen.append((recovery if "the interrupted" in said else "nothing", state == after))
    assert ("rolled back", False) in seen and ("completed", True) in seen, seen


# --- one writer at a time ---------------------------------------------------------------------

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b"4242\\t2026-12-04 10:00:00\\tomni-port upgrade\\n")
print("held", flush=True)
time.sleep(30)
"""


@pytest.fixture
def held(work: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the workspace's lock, as a running `upgrade` does."""
    lock = work / transaction.STATE_DIR / transaction.LOCK_NAME
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    yield holder
    holder.kill()
    holder.wait()


@pytest.mark.parametrize("command", [("sync",), ("extract",), ("check",)], ids=lambda c: c[0])
def test_a_second_command_waits_then_exits_2_naming_the_holder(
    cli: Cli, work: Path, held: subprocess.Popen[str], command: tuple[str, ...]
) -> None:
    before = _tree(work)
    started = time.monotonic()
    busy = cli(*command)
    assert busy.exit_code == 2
    assert time.monotonic() - started >= 0.3, "it waits before it gives up"
    (line,) = busy.stderr.splitlines()
    assert ": OP007 " in line and "`omni-port upgrade` (pid 4242" in line, line
    assert _tree(work) == before


def test_a_lock_goes_with_its_holder(cli: Cli, work: Path, held: subprocess.Popen[str]) -> None:
    """An flock: a killed holder leaves no stale lock behind (git's index.lock does)."""
    held.send_signal(signal.SIGKILL)
    held.wait()
    assert cli("continue", "--why", "reviewed").exit_code == 0


def test_two_writers_at_once_never_mix(cli: Cli, work: Path) -> None:
    """`upgrade` and `extract` started together: the second waits for the first (or gives
    up, exit 2); the workspace is then what one whole command after the other makes."""
    assert cli("continue", "--why", "reviewed").exit_code == 0
    (work / "newer.py").write_text((work / "new.py").read_text().replace("k=2", "k=3"))
    env = {
        **os.environ,
        "OMNI_PORT_LOCK_WAIT": "60",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    runs = [
        ["upgrade", "--to", "newer.py", "--summary", "up.md"],
        ["extract"],
    ]
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "omni_port", "-q", *args],
            cwd=work,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in runs
    ]
    codes = [process.wait() for process in started]
    assert codes[0] in (0, 1) and codes[1] in (0, 1), [p.stderr.read() for p in started if p.stderr]
    assert cli("extract", "--check").exit_code == 0
    assert cli("sync", "--check").exit_code == 0


# --- init: a workspace where decisions are committed ------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ann Maintainer",
        "GIT_AUTHOR_EMAIL": "ann@example.org",
        "GIT_COMMITTER_NAME": "Ann Maintainer",
        "GIT_COMMITTER_EMAIL": "ann@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project's repository, with its own pyproject.toml and rules that would hide what a
    workspace commits (`*.lock`, `generated/`), and the loop's runner and upstreams."""
    repo = tmp_path / "project"
    repo.mkdir()
    for name in ("base.py", "new.py", "omni.py"):
        shutil.copy(DATA / "loop" / name, repo / name)
    (repo / "pyproject.toml").write_text('[project]\nname = "project"  # ours\n')
    (repo / ".gitignore").write_text("*.lock\ngenerated/\n__pycache__/\n")
    _git(repo, "init", "-q")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("OMNI_PORT_LOCK_WAIT", "0.3")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Maintainer")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.org")
    return repo


def test_init_writes_the_table_and_keeps_the_rest(cli: Cli, repository: Path) -> None:
    made = cli("init", "--source", "omni.py", "--base", "base.py", "--upstream", "base.py")
    assert made.exit_code == 0, made.stderr
    text = (repository / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "project"  # ours\n'), "comments and layout kept"
    assert '[tool.omni-port]\nsource = "omni.py"' in text
    assert 'patches = "omni-port/patches"\ngenerated = "omni-port/generated"' in text
    assert "omni-port check" in made.stdout and "repos:" in made.stdout
    again = cli.loud("init", "--upstream", "new.py")
    assert again.exit_code == 0 and "already an omni-port workspace" in again.stderr
    assert (repository / "pyproject.toml").read_text() == text


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--upstream", "base.py"), "OP005"),  # no vLLM-Omni checkout here: which runners?
        (("--source", "omni.py", "--upstream", "vllm-ascend==notaversion"), "OP005"),
        (("elsewhere", "--source", "omni.py", "--upstream", "base.py"), "OP001"),
    ],
)
def test_init_refuses_what_no_command_could_use_and_writes_nothing(
    cli: Cli, repository: Path, args: tuple[str, ...], code: str
) -> None:
    before = _tree(repository)
    refused = cli("init", *args)
    assert refused.exit_code == 2 and f": {code} " in refused.stderr, refused.stderr
    assert _tree(repository) == before


def test_init_finds_the_runners_of_a_vllm_omni_checkout(cli: Cli, repository: Path) -> None:
    runners = repository / "vllm_omni" / "platforms" / "npu" / "worker"
    runners.mkdir(parents=True)
    shutil.copy(repository / "omni.py", runners / "npu_model_runner.py")
    assert cli("init", "--upstream", "base.py").exit_code == 0
    assert 'source = "."' in (repository / "pyproject.toml").read_text()


def test_the_walk_in_a_workspace_survives_commit_and_a_fresh_clone(
    cli: Cli, repository: Path, tmp_path: Path
) -> None:
    """The README's upgrade day in an `init`-ed repository: after the walk, commit, clone,
    and the gate is green in the clone with no re-work (the resolutions are committed)."""
    assert cli("init", "--source", "omni.py", "--base", "base.py", "--upstream", "base.py")
    assert cli("extract").exit_code == 0 and cli("sync").exit_code == 0
    _git(repository, "add", "-A")
    _git(repository, "commit", "-q", "-m", "omni-port workspace")
    assert cli("upgrade", "--to", "new.py", "--summary", "up.md").exit_code == 1
    _edit(repository, "omni-port/generated")
    assert cli("continue", "--why", "reviewed").exit_code == 0
    assert cli("verify").exit_code == 0
    assert cli("check", "--no-cache").exit_code == 0
    _git(repository, "add", "-A")
    status = _git(repository, "status", "--porcelain", "--ignored")
    assert "!! .omni-port/" in status, "the lock and journal stay out"
    assert "omni-port/generated/omni-port.lock" in _git(repository, "ls-files")
    _git(repository, "commit", "-q", "-m", "upgrade onto new.py")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(repository), str(clone))
    os.chdir(clone)
    fresh = cli("check", "--no-cache")
    assert fresh.exit_code == 0, fresh.stdout + fresh.stderr


def test_an_upgrade_over_a_hand_edit_says_to_take_it_first(cli: Cli, work: Path) -> None:
    """The upgrade would write other code there, so the edited lines cannot be told apart
    from its own: the file is named at line 1, with the way to keep the edits."""
    (work / "newer.py").write_text((work / "new.py").read_text().replace("k=2", "k=3"))
    edited = (work / RUNNER).read_bytes()
    refused = cli("upgrade", "--to", "newer.py", "--summary", "up.md")
    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"{RUNNER}:1:1: OP207 "), refused.stderr
    assert "take them first with `omni-port continue`" in refused.stderr
    assert (work / RUNNER).read_bytes() == edited


def test_the_api_stages_a_tree_in_the_command_s_transaction(tmp_path: Path) -> None:
    """``api.writing`` writes for every command (the CLI only prints its diff): under
    --check it compares and writes nothing; otherwise it stages in the running command's
    transaction, outside one it refuses, and the commit publishes the tree."""
    root = tmp_path / "g"
    root.mkdir()
    (root / "a.py").write_bytes(b"old\n")
    (root / "gone.py").write_bytes(b"x\n")
    files = {"a.py": b"new\n", "b.py": b"b\n"}
    checked = writing.write_tree(root, files, ["gone.py"], check=True, diff=True)
    assert [(f.code, f.path.rsplit("/", 1)[-1]) for f in checked.findings] == [
        (Code.OP304, "a.py"),
        (Code.OP304, "b.py"),
        (Code.OP304, "gone.py"),
    ]
    assert "-old\n+new\n" in checked.diff
    assert sorted(p.name for p in root.iterdir()) == ["a.py", "gone.py"]
    with pytest.raises(RuntimeError):
        writing.write_tree(root, files, ["gone.py"])
    with transaction.session(tmp_path, "test", exclusive=True):
        staged = writing.write_tree(root, files, ["gone.py"])
        assert not (root / "b.py").exists(), "nothing written before the commit"
        writing.publish()
    assert (staged.changes.changed, staged.changes.removed, staged.diff) == (
        ("a.py", "b.py"),
        ("gone.py",),
        "",
    )
    assert {p.name: p.read_bytes() for p in root.iterdir()} == files
