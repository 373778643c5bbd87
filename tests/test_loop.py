"""The loop of git on a synthetic upgrade (tests/data/loop: base -> new), as the README's
"Upgrade day" walks it on the real one: upgrade, resolve places, edit the conflict regions
and the blocks verify finds fault with where the tool put them, continue, a green gate;
every decision recorded with who and why, replayed by every later command, and turned back
into a conflict that says why when upstream or omni changes under it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omni_port.model import CONFLICT_CLOSE, CONFLICT_OPEN
from omni_port.patches import lockfile
from tests.conftest import Cli
from tests.golden import DATA

CONFIG = """\
# The loop's workspace.
[tool.omni-port]
source = "omni.py"
base = "base.py"
upstream = "base.py"
patches = "p"
generated = "g"
"""
BLOCK = "omni.R.sample.block-01"
SIGNATURE = "omni.R.sample.edit-01"
STATS = "omni.R.forward.block-01"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    """The workspace after `make sync` on its base, then the upgrade onto new.py."""
    for name in ("base.py", "new.py", "omni.py"):
        shutil.copy(DATA / "loop" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Maintainer")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.org")
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0
    upgraded = cli("upgrade", "--to", "new.py", "--summary", "up.md")
    assert upgraded.exit_code == 1, upgraded.stderr
    return tmp_path


def _region(text: str, block_id: str) -> tuple[int, int]:
    """(start, end) offsets of a block's conflict region, its lines whole."""
    start = text.index(f"{CONFLICT_OPEN} {block_id}")
    start = text.rindex("\n", 0, start) + 1
    end = text.index(CONFLICT_CLOSE, start)
    return start, text.index("\n", end) + 1


def _without_region(text: str, block_id: str) -> str:
    start, end = _region(text, block_id)
    return text[:start] + text[end:]


def _edit(work: Path, generated: str = "g") -> None:
    """What a maintainer does in the generated runner, in place: the signature omni wants,
    the sampling block over upstream's new `if`, the stats block on upstream's new name."""
    runner = work / generated / "omni.py"
    text = runner.read_text()
    text = _without_region(text, SIGNATURE).replace(
        "def sample(self, logits, k=2):", "def sample(self, logits, k=1):"
    )
    text = _without_region(text, BLOCK).replace(
        "        if self.temperature:\n"
        "            logits = self.scale(logits, self.temperature)\n"
        "        else:\n"
        "            logits = self.scale(logits)\n",
        "        # ---------- Omni-new ----------\n"
        "        logits = self.omni_scale(logits)\n"
        "        # ---------- Omni-new ----------\n",
    )
    text = _without_region(text, STATS).replace(
        "        ids = self.prepare(batch)\n",
        "        ids = self.prepare(batch)\n"
        "        # ---------- Omni-new ----------\n"
        "        self.record_omni_stats(ids)\n"
        "        # ---------- Omni-new ----------\n",
    )
    runner.write_text(text)


def _patch(work: Path, block_id: str) -> str:
    return (work / "p" / "omni" / f"{block_id.removeprefix('omni.')}.patch").read_text()


def test_the_walk_through_ends_green_with_every_decision_recorded(cli: Cli, work: Path) -> None:
    """The README's walk-through: three conflicts, the code resolved in place, one
    `continue`, and a gate that passes; every later command agrees and replays it."""
    conflicts = lockfile.read(work / "g").conflicts
    assert sorted(str(row["id"]) for row in conflicts) == [STATS, BLOCK, SIGNATURE]
    _edit(work)
    edited = (work / "g" / "omni.py").read_text()
    done = cli.loud("continue", "--why", "upstream renamed tokens to ids")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "3 resolutions recorded" in done.stderr and "no conflicts left" in done.stderr
    # The runner is the edit (the header names the patches it now comes from).
    assert (work / "g" / "omni.py").read_text().split("\n")[3:] == edited.split("\n")[3:]
    for block_id in (SIGNATURE, BLOCK, STATS):
        patch = _patch(work, block_id)
        assert "resolved-by: Ann Maintainer <ann@example.org>" in patch
        assert "resolved-why: upstream renamed tokens to ids" in patch
    assert 'resolved-code:: "def sample(self, logits, k=1):\\n"' in _patch(work, SIGNATURE)
    assert "self.record_omni_stats(ids)" in _patch(work, STATS)
    assert "resolved-replaces: if self.temperature:" in _patch(work, BLOCK)
    # The gate passes, and every command agrees with what continue wrote.
    assert cli("verify").exit_code == 0
    assert cli("check", "--no-cache").exit_code == 0
    assert cli("extract", "--check").exit_code == 0
    assert cli("sync", "--check").exit_code == 0
    # A re-extraction (what `make sync` runs first) keeps every resolution.
    kept = {p.name: p.read_text() for p in (work / "p").rglob("*.patch")}
    assert cli("extract").exit_code == 0
    assert {p.name: p.read_text() for p in (work / "p").rglob("*.patch")} == kept
    assert cli("sync").exit_code == 0
    assert cli("check", "--no-cache").exit_code == 0


def test_resolve_records_a_place_and_continue_the_rest(cli: Cli, work: Path) -> None:
    """Places with resolve, code by editing: the resolved block's region is gone after
    the next sync, and continue takes the two left."""
    resolved = cli.loud("resolve", BLOCK, "--at", "#1", "--why", "omni scales both branches")
    assert resolved.exit_code == 0, resolved.stderr
    assert "replacing 1 statement" in resolved.stderr
    assert "resolved-why: omni scales both branches" in _patch(work, BLOCK)
    assert cli("sync").exit_code == 1
    runner = work / "g" / "omni.py"
    assert f"{CONFLICT_OPEN} {BLOCK}" not in runner.read_text()
    _edit_rest = runner.read_text()
    text = _without_region(_edit_rest, SIGNATURE).replace(
        "def sample(self, logits, k=2):", "def sample(self, logits, k=1):"
    )
    text = _without_region(text, STATS).replace(
        "        self.run(ids)\n",
        "        self.record_omni_stats(ids)\n        self.run(ids)\n",
    )
    runner.write_text(text)
    done = cli("continue")
    assert done.exit_code == 0, done.stderr
    assert "resolved-why: edited in g/omni.py:" in _patch(work, STATS)
    assert cli("check", "--no-cache").exit_code == 0


def test_a_resolution_turns_back_into_a_conflict_when_upstream_changes_under_it(
    cli: Cli, work: Path
) -> None:
    _edit(work)
    assert cli("continue", "--why", "reviewed").exit_code == 0
    newer = (work / "new.py").read_text()
    (work / "newer.py").write_text(
        newer.replace("def sample(self, logits, k=2):", "def sample(self, logits, k=3):")
        .replace("self.prepare_sampler()", "self.prepare_sampler(logits)")
        .replace("ids = self.prepare(batch)", "ids = self.prepare(batch, True)")
    )
    synced = cli("sync", "--upstream", "newer.py")
    assert synced.exit_code == 1
    reasons = {
        line.split(" OP301 block ")[1].split(":")[0]: line
        for line in synced.stdout.splitlines()
        if " OP301 " in line
    }
    assert set(reasons) == {BLOCK, SIGNATURE, STATS}, synced.stdout
    assert "no longer has `self.prepare_sampler()`" in reasons[BLOCK]
    assert "by Ann Maintainer <ann@example.org> (reviewed)" in reasons[BLOCK]
    assert "upstream's signature is now `def sample(self, logits, k=3):`" in reasons[SIGNATURE]
    assert "no longer has `ids = self.prepare(batch)`" in reasons[STATS]


def test_a_resolution_with_code_is_a_conflict_again_when_omni_changes_the_block(
    cli: Cli, work: Path
) -> None:
    _edit(work)
    assert cli("continue").exit_code == 0
    runner = work / "omni.py"
    runner.write_text(runner.read_text().replace("record_omni_stats(tokens)", "omni_stats(tokens)"))
    assert cli("extract").exit_code == 0
    assert "resolved-code::" in _patch(work, STATS), "the code changed in place: kept"
    synced = cli("sync")
    assert synced.exit_code == 1
    (line,) = [line for line in synced.stdout.splitlines() if " OP301 " in line]
    assert STATS in line and "was made for other code of the block" in line


def test_continue_refuses_an_edit_no_block_owns_and_writes_nothing(cli: Cli, work: Path) -> None:
    _edit(work)
    runner = work / "g" / "omni.py"
    text = runner.read_text().replace("        return self.result\n", "        return None\n")
    runner.write_text(text)
    before = {p.name: p.read_bytes() for p in (work / "p").rglob("*.patch")}
    refused = cli("continue")
    assert refused.exit_code == 2
    line = text.split("\n").index("        return None") + 1
    assert refused.stderr.startswith(f"g/omni.py:{line}:1: OP206 ")
    assert "outside every block" in refused.stderr
    assert {p.name: p.read_bytes() for p in (work / "p").rglob("*.patch")} == before
    assert runner.read_text() == text


def test_continue_refuses_runners_generated_before_the_workspace_changed(
    cli: Cli, work: Path
) -> None:
    _edit(work)
    (work / "pyproject.toml").write_text(
        (work / "pyproject.toml").read_text().replace('"new.py"', '"base.py"')
    )
    refused = cli("continue")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("g/omni-port.lock:1:1: OP005 ")


def test_continue_takes_a_deleted_region_as_a_dropped_block(cli: Cli, work: Path) -> None:
    runner = work / "g" / "omni.py"
    runner.write_text(_without_region(runner.read_text(), STATS))
    done = cli.loud("continue")
    assert done.exit_code == 1, "two conflicts are left"
    assert f"{STATS}: dropped on this upstream" in done.stderr
    assert "\nresolved-code:\n" in _patch(work, STATS), "nothing goes there"
    assert "self.record_omni_stats" not in runner.read_text()
    assert "2 conflicts left" in done.stderr


def test_continue_without_edits_says_what_is_left(cli: Cli, work: Path) -> None:
    done = cli.loud("continue")
    assert done.exit_code == 1
    assert "no edited runner: nothing to take; 3 conflicts left" in done.stderr


# --- resolve: the sync's candidates, told apart, and what a replacement replaces -------------


def test_resolve_at_a_line_of_a_replacement_records_what_it_replaces(cli: Cli, work: Path) -> None:
    """A line no candidate names: the block replaces as many statements there as it replaced
    in its base. Recording none left omni's code beside upstream's, both running."""
    line = (work / "new.py").read_text().split("\n").index(
        "            logits = self.scale(logits, self.temperature)"
    ) + 1
    assert cli("resolve", BLOCK, "--at", str(line)).exit_code == 0
    patch = _patch(work, BLOCK)
    assert "resolved-replaces: logits = self.scale(logits, self.temperature)" in patch
    assert "resolved-path: if self.temperature:" in patch
    assert cli("sync").exit_code == 1, "two conflicts left"
    body = (work / "g" / "omni.py").read_text().split("if self.temperature:\n")[1]
    body = body.split("else:")[0]
    assert "self.omni_scale(logits)" in body and "self.scale(logits, self.temperature)" not in body


def test_two_places_at_one_line_are_told_apart(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One place replacing four statements, one replacing three, both at line 7: they had
    printed alike ('#2 line 7 (0.61); #3 line 7 (0.60)'). Both would delete upstream's new
    `self.barrier(...)`, so neither is offered, and the conflict names each apart; `--at 7`
    replaces there only the statement the block replaced in its base, and says what verify
    will report of the place (upstream's barrier reads the `group` it replaces)."""
    case = DATA / "rules" / "intent" / "no_upstream_put_new_statements_among_what_omni_replaces"
    for name in ("base.py", "omni.py", "upstream.py"):
        shutil.copy(case / name, tmp_path / name)
    upstream = tmp_path / "upstream.py"
    upstream.write_text(upstream.read_text().replace("return output", "return self.result"))
    (tmp_path / "pyproject.toml").write_text(
        CONFIG.replace('upstream = "base.py"', 'upstream = "upstream.py"')
    )
    monkeypatch.chdir(tmp_path)
    assert cli("extract").exit_code == 0
    synced = cli("sync")
    barrier = "it would delete upstream's `self.barrier(group, timeout=self.timeout)`"
    assert f"line 7, replacing 3 statements ({barrier}, which" in synced.stdout
    assert f"line 7, replacing 4 statements ({barrier} and 1 more, which" in synced.stdout
    assert "candidates in upstream.py: none" in synced.stdout
    done = cli.loud("resolve", "omni.R.forward.block-01", "--at", "7")
    assert done.exit_code == 0, done.stderr
    assert "replacing 1 statement (`group = self.group()`)" in done.stderr
    assert "verify will report OP502 undefined name `group`" in done.stderr
    patch = (tmp_path / "p" / "omni" / "R.forward.block-01.patch").read_text()
    assert patch.count("resolved-replaces:") == 1
