"""A pulled lock is no hand edit: what sync wrote in this checkout is recorded where git does
not look (``.omni-port/written/``), and a generated file holding it is not called edited when
a pull, checkout or merge brings another lock (docs/design.md rule 8).

On the loop's workspace (tests/data/loop): a colleague syncs onto new.py and commits the
lock; the runners are not committed, so the pull brings the lock alone.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from omni_port import runtime
from omni_port.api import writing
from omni_port.patches import lockfile, written
from omni_port.sources import transaction
from tests.conftest import Cli
from tests.golden import DATA
from tests.test_loop import CONFIG

RUNNER = Path("g") / "omni.py"
LOCK = Path("g") / lockfile.LOCK_NAME
RECORD = Path(transaction.STATE_DIR) / written.RECORD_DIR / "g.json"


@pytest.fixture
def pulled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    """This checkout after `make sync` on the base, then a pull of the lock a colleague's
    sync onto new.py wrote (the runners on disk are still this checkout's own)."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    for name in ("base.py", "new.py", "omni.py"):
        shutil.copy(DATA / "loop" / name, mine / name)
    (mine / "pyproject.toml").write_text(CONFIG)
    monkeypatch.chdir(mine)
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    shutil.copytree(mine, theirs, ignore=shutil.ignore_patterns(transaction.STATE_DIR))
    monkeypatch.chdir(theirs)
    assert cli("sync", "--upstream", "new.py").exit_code == 1  # its conflicts
    monkeypatch.chdir(mine)
    assert (theirs / RUNNER).read_bytes() != (mine / RUNNER).read_bytes()
    shutil.copy(theirs / LOCK, mine / LOCK)
    return mine


def _codes(text: str, path: Path = RUNNER) -> list[str]:
    return [
        line.split(": ")[1].split()[0] for line in text.splitlines() if line.startswith(f"{path}:")
    ]


def test_a_pulled_lock_is_no_hand_edit_sync_rewrites_the_runner(cli: Cli, pulled: Path) -> None:
    """The finding: `make sync` after a merge refused the runners it had written itself
    (OP207 "edited since sync wrote it"). Fails before the record: exit 2, OP207."""
    theirs = pulled.parent / "theirs"
    synced = cli("sync")
    assert synced.exit_code == 1, synced.stderr  # the pulled upstream's conflicts, no refusal
    assert "OP207" not in synced.stderr + synced.stdout
    assert (pulled / RUNNER).read_bytes() == (theirs / RUNNER).read_bytes()
    assert (pulled / LOCK).read_bytes() == (theirs / LOCK).read_bytes()


def test_a_hand_edit_after_the_pull_is_still_one(cli: Cli, pulled: Path) -> None:
    assert cli("sync").exit_code == 1
    text = (pulled / RUNNER).read_text()
    edited = text.replace("        self.sampler.reset()\n", "        self.sampler.reset(True)\n", 1)
    assert edited != text
    (pulled / RUNNER).write_text(edited)
    line = edited.splitlines().index("        self.sampler.reset(True)") + 1
    refused = cli("sync")
    assert refused.exit_code == 2 and refused.stderr.startswith(f"{RUNNER}:{line}:"), refused.stderr
    assert _codes(refused.stderr) == ["OP207"] and "alone" not in refused.stderr
    assert (pulled / RUNNER).read_text() == edited
    checked = cli("check", "--no-cache")
    assert "OP207" in _codes(checked.stdout), checked.stdout


def test_before_sync_the_gates_call_the_pulled_tree_stale_not_edited(
    cli: Cli, pulled: Path
) -> None:
    """`check` and `verify` say `sync` (OP406), not `continue` (OP207), and neither passes
    runners the lock does not describe. Fails before the record: both said OP207."""
    checked = cli("check", "--no-cache")
    assert checked.exit_code == 1 and _codes(checked.stdout) == ["OP406"], checked.stdout
    verified = cli("verify")
    assert verified.exit_code == 1 and _codes(verified.stdout) == ["OP406"], verified.stdout
    assert "earlier sync" in verified.stdout


def test_without_a_record_the_lock_decides_and_the_refusal_says_why(cli: Cli, pulled: Path) -> None:
    """A checkout whose syncs kept no record (a fresh clone, an older omni-port) has only
    the lock: today's refusal, which now says a pulled lock may be why; `--check` records
    nothing, the sync that writes does. Fails before: the message did not say it."""
    (pulled / RECORD).unlink(missing_ok=True)
    before = (pulled / RUNNER).read_bytes()
    refused = cli("sync")
    assert refused.exit_code == 2 and _codes(refused.stderr) == ["OP207"], refused.stderr
    assert f"judged by {lockfile.LOCK_NAME} alone" in refused.stderr
    assert (pulled / RUNNER).read_bytes() == before
    assert cli("sync", "--check").exit_code == 1
    assert not (pulled / RECORD).exists()
    assert cli("sync", "--discard-edits").exit_code == 1
    assert (pulled / RECORD).is_file(), "the sync that wrote the runner recorded it"


# --- the record -------------------------------------------------------------------------------


def _lock(outputs: dict[str, str]) -> lockfile.Lock:
    return lockfile.Lock("omni-port", "up.py", "0" * 64, "1" * 64, outputs, "omni-port sync")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(root: Path, tree: Path, files: dict[str, bytes]) -> None:
    """One command writing ``files`` (a generated tree) to ``tree``."""
    with transaction.session(root, "test", exclusive=True):
        writing.write_tree(tree, files, [])
        writing.publish()


def test_the_record_lists_this_checkout_s_writes_newest_first(tmp_path: Path) -> None:
    """Each write of a tree is recorded with its lock, in the command's transaction; a
    write again of an earlier output moves it first; at most KEPT_WRITES are kept; a file
    holding any of them, or what the lock names, is as sync wrote it."""
    tree = tmp_path / "gen" / "v2"
    with transaction.session(tmp_path, "test", exclusive=True) as staged:
        writing.write_tree(tree, {"a.py": b"v\n", lockfile.LOCK_NAME: b"{}\n"}, [])
        assert written.find_record(tree) is None, "staged with the tree, not written before it"
        assert tmp_path / RECORD.parent / "gen" / "v2.json" in staged.writes
    versions = [
        {"a.py": f"v{n}\n".encode(), lockfile.LOCK_NAME: f"{n}\n".encode()} for n in range(10)
    ]
    for files in [*versions, versions[3]]:
        _write(tmp_path, tree, files)
    record = written.find_record(tree)
    assert record == tmp_path / RECORD.parent / "gen" / "v2.json"
    known = written.as_written(tree, _lock({"a.py": _sha(b"theirs\n")}))
    assert known.recorded
    kept = [n for n in range(10) if known.wrote("a.py", f"v{n}\n".encode())]
    assert kept == [2, 3, 4, 5, 6, 7, 8, 9], "the 8 newest writes"
    rows = json.loads(record.read_text())["writes"]
    assert [row["outputs"]["a.py"] for row in rows[:2]] == [_sha(b"v3\n"), _sha(b"v9\n")]
    assert known.wrote("a.py", b"theirs\n") and not known.wrote("a.py", b"mine\n")
    assert not known.wrote("b.py", b"v9\n")
    before = record.read_bytes()
    _write(tmp_path, tree, versions[3])
    assert record.read_bytes() == before, "the newest write again changes nothing"


def test_a_tree_outside_the_workspace_or_an_unreadable_record_has_only_the_lock(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "ws", tmp_path / "elsewhere"
    root.mkdir()
    _write(root, outside, {"a.py": b"v\n", lockfile.LOCK_NAME: b"{}\n"})
    assert written.record_path(root, outside) is None
    assert not written.as_written(outside, None).recorded
    tree = root / "g"
    _write(root, tree, {"a.py": b"v\n", lockfile.LOCK_NAME: b"{}\n"})
    assert written.as_written(tree, None).wrote("a.py", b"v\n")
    (root / RECORD).write_text('{"writes": [{"lock": 1}]}')
    known = written.as_written(tree, _lock({"a.py": _sha(b"w\n")}))
    assert not known.recorded and not known.wrote("a.py", b"v\n") and known.wrote("a.py", b"w\n")


def test_held_tells_the_lock_s_tree_from_an_earlier_write_an_edit_and_a_gap(
    tmp_path: Path,
) -> None:
    """What the runtime switch and the gates read: only LOCKED is the tree the lock names."""
    tree = tmp_path / "g"
    _write(tmp_path, tree, {"a.py": b"a\n", "b.py": b"b\n", lockfile.LOCK_NAME: b"{}\n"})
    (tree / "b.py").write_bytes(b"b, edited\n")
    lock = _lock(
        {
            "a.py": _sha(b"a, theirs\n"),
            "b.py": _sha(b"b, theirs\n"),
            "c.py": _sha(b"c\n"),
            "../x.py": _sha(b"x\n"),
        }
    )
    (tree / "c.py").write_bytes(b"c\n")
    held = written.held(tree, lock)
    assert held == {
        "../x.py": written.Held.MISSING,
        "a.py": written.Held.EARLIER,
        "b.py": written.Held.EDITED,
        "c.py": written.Held.LOCKED,
    }


def test_continue_refuses_edits_made_on_an_earlier_generation(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner edited beside runners an earlier sync wrote under another lock was edited
    on that generation: `continue` would read the changes since as the maintainer's. It
    refuses (OP005 at a runner of the earlier generation), nothing written. Fails before:
    it read the edit against the pulled lock's sync (OP206 here)."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    for folder in ("omni", "upstream"):
        shutil.copytree(DATA / folder, mine / folder)
    upstream = "upstream/v1/model_runner_v1.py"
    (mine / "pyproject.toml").write_text(
        f'[tool.omni-port]\nsource = "omni"\nbase = "{upstream}"\nupstream = "{upstream}"\n'
        'patches = "p"\ngenerated = "g"\n'
    )
    text = (mine / upstream).read_text()
    assert "        assert self.model is not None\n" in text
    newer = text.replace("        assert self.model is not None\n", "        self.check()\n", 1)
    (mine / "upstream" / "newer.py").write_text(newer)
    monkeypatch.chdir(mine)
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    shutil.copytree(mine, theirs, ignore=shutil.ignore_patterns(transaction.STATE_DIR))
    monkeypatch.chdir(theirs)
    assert cli("sync", "--upstream", "upstream/newer.py").exit_code == 0
    monkeypatch.chdir(mine)
    shutil.copy(theirs / LOCK, mine / LOCK)
    runner = mine / "g" / "npu_ar_model_runner.py"
    runner.write_text(runner.read_text().replace("return output", "return None", 1))
    before = {p: p.read_bytes() for p in sorted(mine.rglob("*")) if p.is_file()}
    refused = cli("continue", "--why", "mine")
    assert refused.exit_code == 2, refused.stderr
    assert refused.stderr.startswith("g/npu_generation_model_runner.py:1:1: OP005 "), refused.stderr
    assert "earlier sync" in refused.stderr
    assert {p: p.read_bytes() for p in sorted(mine.rglob("*")) if p.is_file()} == before


def test_the_runtime_switch_says_a_pulled_tree_needs_sync_not_continue(
    cli: Cli, pulled: Path
) -> None:
    """The switch refuses a tree that is not the lock's, but says why: an earlier sync's
    output under a pulled lock needs `sync`; only a hand edit needs `continue`. Before the
    record it called the pulled tree edited."""
    lock = lockfile.read(pulled / "g")
    reasons = runtime._edited(pulled / "g", lock)
    assert reasons and all("run `omni-port sync`" in r for r in reasons), reasons
    assert not any("continue" in r for r in reasons)
    runner = pulled / RUNNER
    runner.write_text(runner.read_text() + "# a hand edit\n")
    reasons = runtime._edited(pulled / "g", lock)
    assert any("omni.py was edited since sync wrote it" in r for r in reasons), reasons
