"""Safe I/O: atomic writes, paths that cannot escape, wheels and caches, inputs never executed.

What the writers guarantee (``textio.write_atomic``, and ``transaction.publish``, through
which every command publishes the files it writes):

- a file is never half-written: each is written to a temp file beside it, synced, renamed;
- no temp file is left behind, whatever fails; a run killed outright (SIGKILL) leaves its
  own, and the next write into that folder removes them (never a live run's);
- a rewritten file keeps its mode, a new one gets the umask's;
- a tree write that fails while staging changes nothing; one whose rename fails puts back
  the files it had already renamed (best effort) before re-raising;
- the manifest (patch index, lock file) is renamed last, stale files are removed only after
  every rename, and no path outside the target directory is ever written or removed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from omni_port.errors import BadInput
from omni_port.model import Chunk, ModulePatches, Origin
from omni_port.patches.lockfile import LOCK_NAME
from omni_port.patches.patchfile import INDEX_NAME, parse_piece, piece_filename
from omni_port.patches.store import plan, read_patch_set
from omni_port.sources import index, textio, transaction, upstream
from omni_port.sources.upstream import Spec, SpecKind, parse_spec
from tests.conftest import Cli, LocalIndex

BASE = """\
class NPUModelRunner:
    def execute_model(self, batch):
        self.prepare(batch)
        output = self.model(batch)
        return output
"""
RUNNER = """\
from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.omni_hook(batch)
        # ---------- Omni-new ----------
        output = self.model(batch)
        return output
"""


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _failing_on(
    call: int, real: Callable[..., Any], error: int = errno.ENOSPC
) -> Callable[..., Any]:
    """A stand-in for ``real`` that raises OSError (``error``, default a full disk) on its
    ``call``-th use only."""
    count = 0

    def fake(*args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        if count == call:
            raise OSError(error, os.strerror(error))
        return real(*args, **kwargs)

    return fake


# --- atomic writes --------------------------------------------------------------------------


@pytest.mark.parametrize("broken", ["replace", "fsync"])
def test_write_atomic_keeps_the_old_file_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    target = tmp_path / "out.py"
    target.write_bytes(b"old\n")
    monkeypatch.setattr(os, broken, _failing_on(1, getattr(os, broken)))
    with pytest.raises(BadInput) as error:
        textio.write_atomic(target, b"new\n" * 1000)
    assert error.value.findings[0].code.value == "OP006"
    assert _tree(tmp_path) == {"out.py": b"old\n"}


@pytest.fixture
def old_tree(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    root.mkdir()
    (root / "a.py").write_bytes(b"a old\n")
    (root / "b.py").write_bytes(b"b old\n")
    (root / LOCK_NAME).write_bytes(b"lock old\n")
    return root


NEW = {"a.py": b"a new\n", "b.py": b"b new\n", "c.py": b"c new\n", LOCK_NAME: b"lock new\n"}


def _publish(root: Path, files: dict[str, bytes], remove: tuple[str, ...] = ()) -> None:
    """Publish ``files`` under ``root`` as a command does, its journal in ``root``'s parent."""
    staged = transaction.Transaction(root.parent, "omni-port test")
    staged.write_tree(root, files, sorted(files))
    for rel in remove:
        staged.remove(root / rel)
    staged.commit()


def _about(root: Path, real: Callable[..., Any], fake: Callable[..., Any]) -> Callable[..., Any]:
    """``fake`` for calls about a file in ``root`` (a path, a ``dir=`` or an open file
    descriptor's file), ``real`` for the others (the journal's own writes)."""

    def route(*args: Any, **kwargs: Any) -> Any:
        about = kwargs.get("dir", args[-1] if args else "")
        if isinstance(about, int):
            about = os.readlink(f"/proc/self/fd/{about}")
        path = Path(os.path.abspath(str(about)))
        inside = root in (path, path.parent) and path.name != transaction.STATE_DIR
        return (fake if inside else real)(*args, **kwargs)

    return route


def _in_tree(root: Path, real: Callable[..., Any], fake: Callable[..., Any]) -> Callable[..., Any]:
    """``fake`` for the calls whose last argument is a path in ``root`` (the published
    files), ``real`` for the others (the journal's own writes)."""

    def route(*args: Any) -> Any:
        inside = Path(str(args[-1])).parent == root
        return (fake if inside else real)(*args)

    return route


@pytest.mark.parametrize("call", [1, 2, 4])
def test_write_tree_failing_while_staging_changes_nothing(
    old_tree: Path, monkeypatch: pytest.MonkeyPatch, call: int
) -> None:
    before = _tree(old_tree)
    monkeypatch.setattr(os, "fsync", _failing_on(call, os.fsync))
    with pytest.raises(BadInput):
        _publish(old_tree, NEW)
    assert _tree(old_tree) == before
    assert not (old_tree.parent / transaction.STATE_DIR / transaction.JOURNAL_NAME).exists()


@pytest.mark.parametrize("call", [1, 2, 3, 4])
def test_write_tree_failing_rename_puts_back_what_it_renamed(
    old_tree: Path, monkeypatch: pytest.MonkeyPatch, call: int
) -> None:
    before = _tree(old_tree)
    real = os.replace
    monkeypatch.setattr(os, "replace", _in_tree(old_tree, real, _failing_on(call, real)))
    with pytest.raises(BadInput):
        _publish(old_tree, NEW, remove=("b.py",))
    assert _tree(old_tree) == before
    assert not (old_tree.parent / transaction.STATE_DIR / transaction.JOURNAL_NAME).exists()


def test_write_tree_renames_the_manifest_last_and_removes_after(
    old_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    real = os.replace

    def spy(src: str, dst: Path) -> None:
        if Path(dst).parent == old_tree:
            order.append(Path(dst).name)
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    _publish(old_tree, {LOCK_NAME: b"l\n", "z.py": b"z\n"}, remove=("a.py",))
    assert order == ["z.py", LOCK_NAME]
    assert _tree(old_tree) == {"b.py": b"b old\n", "z.py": b"z\n", LOCK_NAME: b"l\n"}


@pytest.mark.parametrize(
    "rel", ["../x.py", "/tmp/x.py", "a/../../x.py", "a\\..\\x.py", "", "a//b.py", "C:/x.py"]
)
def test_write_tree_refuses_paths_outside_its_root(old_tree: Path, rel: str) -> None:
    before = _tree(old_tree.parent)
    with pytest.raises(ValueError, match="outside"):
        _publish(old_tree, {"fine.py": b"x\n", rel: b"evil\n"})
    assert _tree(old_tree.parent) == before


def test_stale_candidates_never_reach_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (tmp_path / "victim.txt").write_text("precious")
    (root / "old.py").write_text("stale")
    changes = plan(
        root, {"new.py": b"x\n"}, ["old.py", "../victim.txt", str(tmp_path / "victim.txt")]
    )
    assert changes.removed == ("old.py",)
    staged = transaction.Transaction(tmp_path, "omni-port test")
    staged.write_tree(root, {"new.py": b"x\n"}, changes.changed)
    for rel in changes.removed:
        staged.remove(root / rel)
    staged.commit()
    assert (tmp_path / "victim.txt").read_text() == "precious"
    assert sorted(_tree(root)) == ["new.py"]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.omni-port]\nupstream-class = "NPUModelRunner"\n'
    )
    return tmp_path


def _run(cli: Cli, *args: str) -> Any:
    return cli("--config", "pyproject.toml", "--cache-dir", "cache", *args)


def _synced_twice(cli: Cli, workspace: Path) -> dict[str, bytes]:
    """A synced tree (returned), and a second upstream whose sync would rewrite it."""
    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    assert (
        _run(cli, "sync", "--patches", "p", "--upstream", "base.py", "--generated", "g").exit_code
        == 0
    )
    (workspace / "v2.py").write_text(BASE.replace("self.prepare(batch)", "self.prepare(batch, 2)"))
    return _tree(workspace / "g")


def _only_error_line(stderr: str, code: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1 and f": {code} " in lines[0], stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("function", "call", "error"),
    [
        pytest.param("fsync", 2, errno.ENOSPC, id="disk-full-while-staging"),
        pytest.param("replace", 2, errno.ENOSPC, id="disk-full-while-renaming"),
        pytest.param("mkstemp", 1, errno.EROFS, id="read-only-directory"),
        pytest.param("mkstemp", 1, errno.EACCES, id="no-permission"),
    ],
)
def test_a_sync_that_cannot_write_exits_2_in_one_line_and_keeps_the_outputs(
    cli: Cli, workspace: Path, monkeypatch: pytest.MonkeyPatch, function: str, call: int, error: int
) -> None:
    before = _synced_twice(cli, workspace)
    # The new upstream's tree goes into the cache first, so the counted calls are the output's.
    assert _run(cli, "sync", "--check", "--patches", "p", "--upstream", "v2.py").exit_code == 1
    owner = tempfile if function == "mkstemp" else os
    real = getattr(owner, function)
    fake = _failing_on(call, real, error)
    monkeypatch.setattr(owner, function, _about(workspace / "g", real, fake))
    result = _run(cli, "sync", "--patches", "p", "--upstream", "v2.py", "--generated", "g")
    assert result.exit_code == 2, result.stderr
    _only_error_line(result.stderr, "OP006")
    assert result.stderr.startswith("g/"), result.stderr
    assert os.strerror(error) in result.stderr
    assert _tree(workspace / "g") == before, "a failed write changed or left files"


def test_ctrl_c_exits_130_and_keeps_the_outputs(
    cli: Cli, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _synced_twice(cli, workspace)
    real = os.replace
    calls: list[int] = []

    def interrupted(src: str, dst: str) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    result = _run(cli, "sync", "--patches", "p", "--upstream", "v2.py", "--generated", "g")
    assert result.exit_code == 130
    assert "interrupted" in result.stderr
    assert _tree(workspace / "g") == before


def test_ctrl_c_while_downloading_exits_130(
    cli: Cli, workspace: Path, releases: LocalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(artifact: index.Artifact, into: BinaryIO, *args: object) -> None:
        into.write(b"PK\x03\x04 half a wheel")  # the index's file, half copied
        raise KeyboardInterrupt

    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    monkeypatch.setattr(index, "_stream", interrupted)
    result = _run(
        cli, "sync", "--patches", "p", "--upstream", "vllm-ascend==1.0.0", "--generated", "g"
    )
    assert result.exit_code == 130, result.stderr
    assert releases.downloads == ["vllm_ascend-1.0.0-py3-none-any.whl"]
    assert not (workspace / "g").exists()
    assert not [p for p in workspace.rglob("*") if p.is_file() and "archives" in p.parts]


class _FullDisk:
    """A file open for writing that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, handle: BinaryIO, room: int) -> None:
        self.handle = handle
        self.room = room

    def write(self, data: bytes) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)


def _cache_files(workspace: Path) -> list[str]:
    cache = workspace / "cache"
    return sorted(
        p.relative_to(cache).as_posix()
        for p in cache.rglob("*")
        if p.is_file() and p.parts[-2] != "trees"
    )


@pytest.mark.parametrize(
    ("fault", "unwritten"),
    [
        pytest.param("write", "vllm_ascend-1.0.0-py3-none-any.whl", id="while-downloading"),
        pytest.param("replace", "vllm_ascend-1.0.0-py3-none-any.whl", id="renaming-the-archive"),
        pytest.param("digest", "vllm_ascend-1.0.0-py3-none-any.whl.sha256", id="its-sha256"),
    ],
)
def test_a_full_disk_while_the_cache_downloads_exits_2_naming_the_file_and_keeps_nothing(
    cli: Cli,
    workspace: Path,
    releases: LocalIndex,
    monkeypatch: pytest.MonkeyPatch,
    fault: str,
    unwritten: str,
) -> None:
    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    if fault == "write":
        real = index._stream

        def into_a_full_disk(artifact: index.Artifact, into: BinaryIO, *args: Any) -> None:
            real(artifact, _FullDisk(into, 10), *args)  # type: ignore[arg-type]

        monkeypatch.setattr(index, "_stream", into_a_full_disk)
    else:
        # The archive's rename is the run's first, its sha256's the second.
        monkeypatch.setattr(os, "replace", _failing_on(2 if fault == "digest" else 1, os.replace))
    result = _run(
        cli, "sync", "--patches", "p", "--upstream", "vllm-ascend==1.0.0", "--generated", "g"
    )
    assert result.exit_code == 2, result.stderr
    _only_error_line(result.stderr, "OP006")
    folder = Path("cache", "archives", "vllm-ascend-1.0.0")
    assert result.stderr.startswith(f"{folder / unwritten}:0:1: OP006 "), result.stderr
    assert os.strerror(errno.ENOSPC) in result.stderr
    assert _cache_files(workspace) == [], "half a download was kept"
    assert not (workspace / "g").exists()


def test_a_full_disk_while_keeping_a_member_keeps_neither_it_nor_its_sha256(
    tmp_path: Path, releases: LocalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The member is kept first, its sha256 last: without its sha256 it goes too."""
    upstream.fetch_archive("vllm-ascend", "2.0.0", tmp_path)
    # The member's rename is the first (the archive is kept already), its sha256's the second.
    monkeypatch.setattr(os, "replace", _failing_on(2, os.replace))
    with pytest.raises(BadInput) as error:
        upstream.locate(
            Spec(SpecKind.PYPI, "vllm-ascend", "2.0.0"), upstream.ASCEND_RUNNER, tmp_path
        )
    kept = tmp_path / "src" / "vllm-ascend-2.0.0" / upstream.ASCEND_RUNNER
    (finding,) = error.value.findings
    assert (finding.code.value, finding.path) == ("OP006", f"{kept}{upstream.DIGEST_SUFFIX}")
    assert not kept.exists(), "a member without its sha256 was left"


def test_a_check_entry_too_deep_to_read_is_checked_again(cli: Cli, workspace: Path) -> None:
    """The JSON reader gives up on deep nesting with a RecursionError: the entry is damaged."""
    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    sync = ("sync", "--patches", "p", "--upstream", "base.py", "--generated", "g")
    assert _run(cli, *sync).exit_code == 0
    check = ("check", "runner.py", "--patches", "p", "--upstream", "base.py", "--generated", "g")
    first = _run(cli, *check)
    (entry,) = (workspace / "cache" / "check").glob("*.json")
    kept = entry.read_bytes()
    entry.write_text("[" * 100_000 + "]" * 100_000)
    again = _run(cli, *check)
    assert (again.exit_code, again.stdout, again.stderr) == (first.exit_code, first.stdout, "")
    assert entry.read_bytes() == kept, "the check ran and kept its findings anew"


# --- file modes ------------------------------------------------------------------------------


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set this process's umask for one test."""
    old = os.umask(0o022)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_outputs_get_the_umask_mode(
    cli: Cli, workspace: Path, umask: Callable[[int], None], mask: int, mode: int
) -> None:
    umask(mask)
    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    assert (
        _run(cli, "sync", "--patches", "p", "--upstream", "base.py", "--generated", "g").exit_code
        == 0
    )
    written = [*(workspace / "p").rglob("*.*"), *(workspace / "g").rglob("*.*")]
    assert len(written) >= 4
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in written} == {
        p.name: mode for p in written
    }


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_a_rewritten_file_keeps_its_mode(
    tmp_path: Path, umask: Callable[[int], None], mode: int
) -> None:
    """As an editor does: a file someone made 640 or 755 stays so when it is written again."""
    umask(0o022)
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "runner.py"
    target.write_bytes(b"old\n")
    target.chmod(mode)
    textio.write_atomic(target, b"new\n")
    assert (target.read_bytes(), stat.S_IMODE(target.stat().st_mode)) == (b"new\n", mode)
    _publish(tmp_path / "out", {"runner.py": b"newer\n"})
    assert (target.read_bytes(), stat.S_IMODE(target.stat().st_mode)) == (b"newer\n", mode)


def test_a_sync_keeps_the_modes_of_the_files_it_rewrites(
    cli: Cli, workspace: Path, umask: Callable[[int], None]
) -> None:
    before = _synced_twice(cli, workspace)
    module, lock = workspace / "g" / "runner.py", workspace / "g" / LOCK_NAME
    module.chmod(0o640)
    lock.chmod(0o600)
    umask(0o022)
    sync = ("sync", "--patches", "p", "--generated", "g")
    assert _run(cli, *sync, "--upstream", "base.py", "--check").exit_code == 0, (
        "a mode is no change"
    )
    assert _run(cli, *sync, "--upstream", "v2.py").exit_code == 0
    assert _tree(workspace / "g") != before
    assert stat.S_IMODE(module.stat().st_mode) == 0o640
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600


# --- temp files of a killed run -----------------------------------------------------------


def _dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


def test_the_next_write_removes_the_temp_files_of_a_killed_run(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getppid()
    left = [tmp_path / f".runner.py.{dead}-k3j_x9.tmp", tmp_path / f".lock.{dead}-a1b2.tmp"]
    live = tmp_path / f".runner.py.{alive}-zz99.tmp"  # a concurrent run's, still writing
    unrelated = [tmp_path / ".runner.py.swp", tmp_path / "notes.tmp"]
    for path in (*left, live, *unrelated):
        path.write_bytes(b"staged")
    textio.write_atomic(tmp_path / "runner.py", b"x\n")
    assert not any(path.exists() for path in left)
    assert live.exists() and all(path.exists() for path in unrelated)


KILLED_WHILE_STAGING = """
import os, signal, sys
from omni_port import cli

real, calls = os.fsync, []

def fsync(fd):
    name = os.readlink(f"/proc/self/fd/{fd}")
    if name.endswith(".tmp") and "/g/" in name:  # an output's temp file, not the journal's
        calls.append(fd)
    if len(calls) == 2:  # both temp files staged, none renamed yet
        os.kill(os.getpid(), signal.SIGKILL)
    real(fd)

os.fsync = fsync
sys.argv = ["omni-port", *sys.argv[1:]]
cli.run()
"""


def test_temp_files_of_a_sync_killed_while_staging_go_with_the_next_sync(
    cli: Cli, workspace: Path
) -> None:
    before = _synced_twice(cli, workspace)
    args = ["--config", "pyproject.toml", "-q", "sync", "--patches", "p", "--upstream", "v2.py"]
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WHILE_STAGING, *args, "--generated", "g"],
        cwd=workspace,
        capture_output=True,
    )
    assert killed.returncode == -9, killed.stderr
    left = sorted(p.name for p in (workspace / "g").glob(".*.tmp"))
    assert left and _tree(workspace / "g").keys() - before.keys() == {*left}, "only temp files"
    again = _run(cli, "sync", "--patches", "p", "--upstream", "v2.py", "--generated", "g")
    assert again.exit_code == 0
    assert "rolled back the interrupted `omni-port sync`" in again.stderr
    assert not list(workspace.rglob("*.tmp"))


def test_an_earlier_versions_temp_files_go_once_they_are_an_hour_old(tmp_path: Path) -> None:
    """Its temp names carry no process id: only their age tells a killed run's."""
    old, fresh = tmp_path / ".runner.py.k3j_x9ab.tmp", tmp_path / ".lock.a1b2c3d4.tmp"
    for path in (old, fresh):
        path.write_bytes(b"staged")
    hours_ago = os.stat(old).st_mtime - 2 * textio.LEGACY_AGE
    os.utime(old, (hours_ago, hours_ago))
    textio.write_atomic(tmp_path / "runner.py", b"x\n")
    assert (old.exists(), fresh.exists()) == (False, True)


def test_a_sync_after_a_killed_sync_leaves_no_temp_file(cli: Cli, workspace: Path) -> None:
    _synced_twice(cli, workspace)
    dead = _dead_pid()
    staged = [
        workspace / "g" / f".runner.py.{dead}-q1w2e3.tmp",
        workspace / "p" / "runner" / f".R.execute_model.block-01.patch.{dead}-x.tmp",
    ]
    for path in staged:
        path.write_bytes(b"half")
    # Nothing else changes: the run that writes there still removes them.
    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    assert (
        _run(cli, "sync", "--patches", "p", "--upstream", "base.py", "--generated", "g").exit_code
        == 0
    )
    assert not [p.name for p in workspace.rglob("*.tmp")]


def test_an_edited_lock_cannot_make_sync_delete_outside_its_output(
    cli: Cli, workspace: Path
) -> None:
    assert _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p").exit_code == 0
    assert (
        _run(cli, "sync", "--patches", "p", "--upstream", "base.py", "--generated", "g").exit_code
        == 0
    )
    lock = workspace / "g" / LOCK_NAME
    data = json.loads(lock.read_text())
    data["outputs"]["../runner.py"] = "0" * 64
    lock.write_text(json.dumps(data))
    assert (
        _run(cli, "sync", "--patches", "p", "--upstream", "base.py", "--generated", "g").exit_code
        == 0
    )
    assert (workspace / "runner.py").read_text() == RUNNER


# --- patch file names -----------------------------------------------------------------------


def _module(name: str, piece_id: str) -> tuple[ModulePatches, Chunk]:
    piece = Chunk(piece_id, "", "", "x = 1\n", Origin("m.py", 1, 1))
    return ModulePatches(name, "src/m.py", "", "", "", (piece,)), piece


@pytest.mark.parametrize(
    ("name", "piece_id"),
    [
        pytest.param("m.py", "m./../../evil", id="dotdot-parts"),
        pytest.param("m.py", "m.a/b", id="slash"),
        pytest.param("m.py", "m.a\\b", id="backslash"),
        pytest.param("m.py", "m...", id="dotdot-local"),
        pytest.param("...py", "...chunk-01", id="module-named-dotdot"),
        pytest.param("m/n.py", "m/n.chunk-01", id="module-with-folder"),
    ],
)
def test_piece_file_names_stay_inside_the_patches_directory(name: str, piece_id: str) -> None:
    module, piece = _module(name, piece_id)
    with pytest.raises(BadInput) as error:
        piece_filename(module, piece)
    assert error.value.findings[0].code.value == "OP203"


def test_a_normal_piece_file_name() -> None:
    module, piece = _module("npu_model_runner.py", "npu_model_runner.R.execute_model.block-01")
    assert piece_filename(module, piece) == "npu_model_runner/R.execute_model.block-01.patch"


@pytest.mark.parametrize("name", ["../evil.py", "/abs/evil.py", "a/b.py", "...py", ""])
def test_index_module_names_cannot_escape_the_output(tmp_path: Path, name: str) -> None:
    (tmp_path / INDEX_NAME).write_text(f"omni-port-index: 1\n\nmodule: {name}\n")
    with pytest.raises(BadInput) as error:
        read_patch_set(tmp_path)
    assert (error.value.findings[0].code.value, error.value.findings[0].line) == ("OP203", 3)


def test_a_piece_id_edited_into_a_path_is_refused() -> None:
    text = "omni-port-patch: 1\nid: ../../evil\ntype: chunk\n---\n"
    with pytest.raises(BadInput) as error:
        parse_piece(text, "x.patch")
    assert (error.value.findings[0].code.value, error.value.findings[0].line) == ("OP201", 2)


def test_extract_of_a_source_named_dotdot_writes_nothing(cli: Cli, workspace: Path) -> None:
    (workspace / "...py").write_text(RUNNER)
    before = _tree(workspace)
    result = _run(cli, "extract", "...py", "--base", "base.py", "--patches", "p")
    assert result.exit_code == 2 and "OP203" in result.stderr
    # The base's parsed tree may be kept in the cache: it is sound, and no output; the
    # workspace's lock is the tool's own state, as the cache is.
    after = {
        name: data
        for name, data in _tree(workspace).items()
        if not name.startswith(("cache/", f"{transaction.STATE_DIR}/"))
    }
    assert after == before


# --- release archives and the download cache-------------------------------------------------------


def _wheel(path: Path, members: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    return path


@pytest.mark.parametrize("name", ["pkg\\..\\..\\evil.py", "..\\evil.py", "pkg/./../../x.py"])
def test_wheel_members_with_backslashes_or_dotdot_are_refused(tmp_path: Path, name: str) -> None:
    wheel = _wheel(tmp_path / "w.whl", {"pkg/ok.py": b"a = 1\n", name: b"x = 1\n"})
    with pytest.raises(BadInput):
        upstream.python_members(wheel, "pkg")
    with pytest.raises(BadInput):
        upstream.read_member(wheel, name)


def test_a_symlink_member_is_read_as_its_bytes_never_followed(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path / "w.whl",
        {"pkg/link.py": b"/etc/passwd", "pkg/ok.py": b"a = 1\n"},
        ("pkg/link.py",),
    )
    found = upstream.python_members(wheel, "pkg")
    assert found == {"pkg/link.py": b"/etc/passwd", "pkg/ok.py": b"a = 1\n"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.whl"]


@pytest.mark.parametrize("text", ["x==1.0/../../etc", "../../x==1.0", "vllm-ascend==0.1\\..\\.."])
def test_a_spec_with_a_path_inside_never_becomes_a_cache_path(text: str) -> None:
    assert parse_spec(text, "vllm-ascend").kind is SpecKind.PATH


@pytest.fixture
def releases(local_index: LocalIndex) -> LocalIndex:
    """A local index with small vllm-ascend wheels whose runner names their version."""
    for version in ("1.0.0", "1.1.0rc1", "2.0.0", "3.0.0"):
        body = f"VERSION = {version!r}\n".encode()
        local_index.wheel("vllm-ascend", version, {upstream.ASCEND_RUNNER: body})
    return local_index


def test_downloads_are_cached_by_name_and_version(tmp_path: Path, releases: LocalIndex) -> None:
    cache = tmp_path / "cache"
    for version in ("1.0.0", "1.1.0rc1", "1.0.0"):
        located = upstream.locate(
            Spec(SpecKind.PYPI, "vllm-ascend", version), upstream.ASCEND_RUNNER, cache
        )
        assert located.source.text == f"VERSION = {version!r}\n"
        assert located.label == f"vllm-ascend=={version}"
    assert releases.downloads == [
        "vllm_ascend-1.0.0-py3-none-any.whl",
        "vllm_ascend-1.1.0rc1-py3-none-any.whl",
    ]
    assert sorted(_tree(cache)) == [
        "archives/vllm-ascend-1.0.0/vllm_ascend-1.0.0-py3-none-any.whl",
        "archives/vllm-ascend-1.0.0/vllm_ascend-1.0.0-py3-none-any.whl.sha256",
        "archives/vllm-ascend-1.1.0rc1/vllm_ascend-1.1.0rc1-py3-none-any.whl",
        "archives/vllm-ascend-1.1.0rc1/vllm_ascend-1.1.0rc1-py3-none-any.whl.sha256",
        f"src/vllm-ascend-1.0.0/{upstream.ASCEND_RUNNER}",
        f"src/vllm-ascend-1.0.0/{upstream.ASCEND_RUNNER}.sha256",
        f"src/vllm-ascend-1.1.0rc1/{upstream.ASCEND_RUNNER}",
        f"src/vllm-ascend-1.1.0rc1/{upstream.ASCEND_RUNNER}.sha256",
    ]


def test_a_kept_member_answers_without_opening_the_archive(
    tmp_path: Path, releases: LocalIndex
) -> None:
    spec = Spec(SpecKind.PYPI, "vllm-ascend", "2.0.0")
    upstream.locate(spec, upstream.ASCEND_RUNNER, tmp_path)
    for wheel in (tmp_path / "archives").rglob("*.whl"):
        wheel.write_bytes(b"not a zip any more")
    again = upstream.locate(spec, upstream.ASCEND_RUNNER, tmp_path)
    assert again.source.text == "VERSION = '2.0.0'\n"
    assert len(releases.downloads) == 1


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated-mid-line"),
        pytest.param(lambda data: data.split(b"\n")[0] + b"\n", id="truncated-but-parses"),
        pytest.param(lambda data: data.replace(b"2.0.0", b"6.6.6"), id="edited"),
    ],
)
def test_a_damaged_kept_member_is_read_again_from_the_archive(
    tmp_path: Path, releases: LocalIndex, damage: Callable[[bytes], bytes]
) -> None:
    spec = Spec(SpecKind.PYPI, "vllm-ascend", "2.0.0")
    first = upstream.locate(spec, upstream.ASCEND_RUNNER, tmp_path).source.text
    kept = tmp_path / "src" / "vllm-ascend-2.0.0" / upstream.ASCEND_RUNNER
    kept.write_bytes(damage(kept.read_bytes() + b"class NPUModelRunner:\n    pass\n"))
    again = upstream.locate(spec, upstream.ASCEND_RUNNER, tmp_path)
    assert again.source.text == first == "VERSION = '2.0.0'\n"
    assert kept.read_text() == first, "the kept copy is repaired"
    assert len(releases.downloads) == 1, "the archive was whole: no second download"


def test_a_truncated_cached_wheel_is_downloaded_again(tmp_path: Path, releases: LocalIndex) -> None:
    spec = Spec(SpecKind.PYPI, "vllm-ascend", "2.0.0")
    upstream.locate(spec, upstream.ASCEND_RUNNER, tmp_path)
    (wheel,) = (tmp_path / "archives").rglob("*.whl")
    wheel.write_bytes(wheel.read_bytes()[:40])
    for kept in (tmp_path / "src").rglob("*.py"):
        kept.unlink()
    again = upstream.locate(spec, upstream.ASCEND_RUNNER, tmp_path)
    assert again.source.text == "VERSION = '2.0.0'\n"
    assert len(releases.downloads) == 2
    assert zipfile.is_zipfile(wheel)


def test_concurrent_downloads_of_one_release_each_use_their_own_temporary_file(
    tmp_path: Path, releases: LocalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs on a cold cache: the second finishes while the first is between its copy
    and its rename (with one fixed ``.part`` name, the first run then crashed)."""
    real = os.replace
    nested: list[Path] = []
    started: list[bool] = []

    def interleaved(src: str, dst: str) -> None:
        if str(dst).endswith(".whl") and not started:
            started.append(True)
            nested.append(upstream.fetch_archive("vllm-ascend", "3.0.0", tmp_path))
        real(src, dst)

    monkeypatch.setattr(os, "replace", interleaved)
    first = upstream.fetch_archive("vllm-ascend", "3.0.0", tmp_path)
    assert first == nested[0] and zipfile.is_zipfile(first)
    names = sorted(p.name for p in first.parent.iterdir())
    assert names == [first.name, first.name + upstream.DIGEST_SUFFIX], "temp files left"


# --- inputs are read, never imported or executed --------------------------------------------

TRIPWIRE = """\
import pathlib
pathlib.Path("EXECUTED-{name}").write_text("module code ran")
raise SystemExit("{name} was executed")
"""

EXECUTED: list[str] = []
WATCHING: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not WATCHING:
        return
    if event == "exec" and args and hasattr(args[0], "co_filename"):
        EXECUTED.append(args[0].co_filename)
    elif event == "import" and args and str(args[0]).startswith(("vllm_ascend", "runner", "base")):
        EXECUTED.append(f"import {args[0]}")


sys.addaudithook(_audit)


def test_inputs_are_never_imported_or_executed(cli: Cli, workspace: Path) -> None:
    (workspace / "runner.py").write_text(TRIPWIRE.format(name="runner") + RUNNER)
    package = workspace / "up" / "vllm_ascend"
    (package / "worker").mkdir(parents=True)
    (package / "__init__.py").write_text(TRIPWIRE.format(name="package"))
    (package / "worker" / "__init__.py").write_text(TRIPWIRE.format(name="subpackage"))
    (package / "worker" / "model_runner_v1.py").write_text(TRIPWIRE.format(name="upstream") + BASE)
    (workspace / "base.py").write_text(TRIPWIRE.format(name="base") + BASE)
    WATCHING.append(True)
    try:
        extracted = _run(cli, "extract", "runner.py", "--base", "base.py", "--patches", "p")
        synced = _run(cli, "sync", "--patches", "p", "--upstream", "up", "--generated", "g")
    finally:
        WATCHING.clear()
    assert (extracted.exit_code, synced.exit_code) == (0, 0), extracted.stderr + synced.stderr
    assert not list(workspace.glob("EXECUTED-*"))
    ours = [
        n
        for n in EXECUTED
        if n.startswith("import ") or not os.path.isabs(n) or str(workspace) in n
    ]
    assert not [n for n in ours if not n.startswith("<")], ours
    assert not [name for name in sys.modules if name.startswith(("vllm_ascend", "runner"))]
    generated = (workspace / "g" / "runner.py").read_text()
    assert 'raise SystemExit("runner was executed")' in generated
