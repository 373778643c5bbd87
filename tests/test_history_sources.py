"""Upstream history and PATH@REV specs: small git repositories made here, nothing online.

A ``PATH@REV`` spec reads a file of a local clone at any tag or commit with ``git show``,
leaving the working tree alone; it works wherever a SPEC does. Between two revisions of
one clone, upstream history is every commit that changed the runner module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.sources import gitrepo, history
from omni_port.sources.platform import GPU
from omni_port.sources.upstream import ASCEND_RUNNER, Spec, SpecKind, locate, parse_spec
from tests.conftest import Cli
from tests.golden import DATA

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args], env=_ENV, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def _runner(count_line: str, extra: str = "") -> str:
    """An upstream runner module whose ``forward`` holds ``count_line``."""
    return textwrap.dedent(
        f"""\
        from fakeacc.runner import GPUModelRunner


        class NPUModelRunner(GPUModelRunner):
            def forward(self, batch):
                {extra or "pass"}
                tokens = self.prepare(batch)
                {count_line}
                return self.run(tokens)
        """
    )


def _commit(repo: Path, text: str, tag: str = "", path: str = ASCEND_RUNNER) -> str:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", tag or "change")
    if tag:
        _git(repo, "tag", tag)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """v1 (base), an untagged commit, v2 (drift: what omni took), v3 (the target)."""
    root = tmp_path / "ascend"
    root.mkdir()
    _git(root, "init", "-q")
    _commit(root, "# unrelated\n", path="README.md")
    _commit(root, _runner("self.count = 0"), "v1")
    _commit(root, _runner("self.count = 0", "self.trace(batch)"))
    _commit(root, _runner("self.count: int | None = None", "self.trace(batch)"), "v2")
    _commit(root, _runner("self.count = None", "self.trace(batch)"), "v3")
    # A dirty working tree: reading a revision must not look at it.
    (root / ASCEND_RUNNER).write_text("this is not python\n")
    return root


def test_a_git_spec_names_a_revision_of_a_clone(repo: Path) -> None:
    assert parse_spec(f"{repo}@v1", "vllm-ascend") == Spec(
        SpecKind.GIT, "vllm-ascend", path=str(repo), rev="v1"
    )
    assert parse_spec(f"{repo}@v1", "vllm-ascend").label == f"{repo}@v1"
    # Not a clone: an `@` in a plain path stays a path.
    assert parse_spec(f"{repo.parent}@v1", "vllm-ascend").kind is SpecKind.PATH


def test_a_revision_is_read_without_checking_it_out(repo: Path, tmp_path: Path) -> None:
    located = locate(parse_spec(f"{repo}@v2", "vllm-ascend"), ASCEND_RUNNER, tmp_path)
    assert "self.count: int | None = None" in located.source.text
    head = locate(parse_spec(f"{repo}@HEAD~1", "vllm-ascend"), ASCEND_RUNNER, tmp_path)
    assert head.source.text == located.source.text
    assert (repo / ASCEND_RUNNER).read_text() == "this is not python\n"
    with pytest.raises(BadInput) as error:
        locate(parse_spec(f"{repo}@nope", "vllm-ascend"), ASCEND_RUNNER, tmp_path)
    assert error.value.findings[0].code.value == "OP003"


def test_history_of_a_clone_is_every_commit_that_changed_the_runner(
    repo: Path, tmp_path: Path
) -> None:
    names = history.labels(f"{repo}@v1", f"{repo}@v3", tmp_path)
    # The README commit before v1 touched no runner: it is not history. A tagged commit
    # goes by its tag.
    assert names[0] == f"{repo}@v1" and names[2:] == [f"{repo}@v2", f"{repo}@v3"]
    assert len(names) == 4 and names[1].startswith(f"{repo}@")
    releases, digests, notes = history.load(names, tmp_path)
    assert [r.label for r in releases] == names and not notes
    assert "self.count: int | None = None" in releases[2].text
    assert all(len(sha) == 64 for _, sha in digests)


def test_capped_history_of_a_clone_keeps_the_commits_right_after_the_base(
    repo: Path,
) -> None:
    """More commits after the base than the cap: the oldest ones are kept, those the base's
    code became (git's ``--max-count`` with ``--reverse`` would keep the newest)."""
    after = [_commit(repo, _runner(f"self.count = {n}")) for n in range(1, 5)]
    found = gitrepo.commits_touching(str(repo), "v3", "HEAD", ASCEND_RUNNER, 2)
    assert found == after[:2]
    assert gitrepo.commits_touching(str(repo), "v3", "HEAD", ASCEND_RUNNER, 9) == after


#: Releases and the dates they came out (as the index gives them).
DATED = {
    "0.16.0rc1": "2025-11-10",
    "0.17.0rc1": "2025-12-01",
    "0.18.0": "2026-04-30",
    "0.19.1rc1": "2026-04-30",
    "0.20.2rc1": "2026-06-03",
    "0.23.0": "2026-08-16",
    "0.23.0.post1": "2026-09-22",
    "0.24.0rc1": "2026-08-04",
}


@pytest.mark.parametrize(
    ("base", "target", "expected"),
    [
        pytest.param("0.20.2rc1", "0.23.0", ["0.18.0", "0.19.1rc1", "0.20.2rc1", "0.23.0"],
                     id="six-months-before-the-base"),
        pytest.param("0.24.0rc1", "0.24.0rc1", ["0.18.0", "0.19.1rc1", "0.20.2rc1", "0.23.0",
                                                 "0.23.0.post1", "0.24.0rc1"],
                     id="by-date-below-the-base"),
        pytest.param("0.16.0rc1", "0.17.0rc1", ["0.16.0rc1", "0.17.0rc1"], id="at-the-start"),
        pytest.param("0.23.0", "0.18.0", [], id="downgrade"),
        pytest.param("0.99.0", "0.23.0", [], id="unknown-base"),
    ],
)  # fmt: skip
def test_history_reaches_six_months_before_the_base(
    base: str, target: str, expected: list[str]
) -> None:
    assert history.window(DATED, base, target) == expected


def test_history_reaches_back_to_the_platforms_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: a hand port's copy can be as old as the platform's first release (vLLM-Omni's
    GPU ``execute_model`` kept vLLM 0.14.1's text around a block 0.15.0 brought), and only a
    release that lacks a change dates it; so history reaches back to the releases base
    detection ranks (the floor) when that is older than six months before the base, and
    to six months when the floor is newer. Release candidates and sdist-only releases with
    no date go by their version there."""
    dated = {**DATED, "0.15.0": "2025-10-01", "0.16.0": ""}
    monkeypatch.setattr(history.upstream, "dated_releases", lambda dist: dated)
    old = replace(GPU, floor="0.16.0rc1")
    picked = history.labels("vllm==0.24.0rc1", "vllm==0.24.0rc1", tmp_path, platform=old)
    assert picked == [
        f"vllm=={v}"
        for v in ["0.16.0rc1", "0.16.0", "0.17.0rc1", "0.18.0", "0.19.1rc1", "0.20.2rc1",
                  "0.23.0", "0.23.0.post1", "0.24.0rc1"]
    ]  # fmt: skip
    new = replace(GPU, floor="0.20.2rc1")
    picked = history.labels("vllm==0.24.0rc1", "vllm==0.24.0rc1", tmp_path, platform=new)
    assert picked[0] == "vllm==0.18.0"


def test_without_dates_the_releases_before_the_base_are_counted() -> None:
    """An index with no dates (a folder of files): the eight releases before the base; a
    post release never takes an older release's place in that count."""
    undated = {v: "" for v in [f"0.{n}.0" for n in range(1, 12)] + ["0.10.0.post1"]}
    picked = history.window(undated, "0.11.0", "0.11.0")
    assert picked[0] == "0.3.0" and picked[-1] == "0.11.0"
    assert "0.10.0.post1" in picked and len(picked) == 10


def test_release_candidates_of_one_version_go_by_their_number() -> None:
    """The window is the same on every run: rc1 < rc2 < rc3 < the final release."""
    undated = {v: "" for v in ["0.13.0rc3", "0.13.0", "0.13.0rc1", "0.14.0rc1", "0.13.0rc2"]}
    assert history.window(undated, "0.14.0rc1", "0.14.0rc1") == [
        "0.13.0rc1", "0.13.0rc2", "0.13.0rc3", "0.13.0", "0.14.0rc1"
    ]  # fmt: skip


def test_releases_are_kept_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def releases(dist: str) -> dict[str, str]:
        calls.append(dist)
        return {"1.0": "2026-01-01", "1.1rc1": "", "1.1": "2026-03-01"}

    monkeypatch.setattr(history.upstream, "dated_releases", releases)
    first = history.known_releases("pkg", tmp_path, ["1.0", "1.1"])
    assert first == {"1.0": "2026-01-01", "1.1rc1": "", "1.1": "2026-03-01"}
    assert history.known_releases("pkg", tmp_path, ["1.0"]) == first
    assert calls == ["pkg"]
    # A version the kept list lacks asks again.
    history.known_releases("pkg", tmp_path, ["1.2"])
    assert calls == ["pkg", "pkg"]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(b"\xff\xfe\x00garbage\n", id="garbage"),
        pytest.param(b"1.0 2026-01-01\n1.1rc1\n1.1 20", id="cut-mid-line"),
    ],
)
def test_a_damaged_list_of_releases_is_asked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: bytes
) -> None:
    listed = {"1.0": "2026-01-01", "1.1rc1": "", "1.1": "2026-03-01"}
    calls = []

    def releases(dist: str) -> dict[str, str]:
        calls.append(dist)
        return listed

    monkeypatch.setattr(history.upstream, "dated_releases", releases)
    history.known_releases("pkg", tmp_path, ["1.0"])
    kept = tmp_path / "versions" / "pkg.dated.txt"
    intact = kept.read_bytes()
    kept.write_bytes(damage)
    assert history.known_releases("pkg", tmp_path, ["1.0"]) == listed
    assert calls == ["pkg", "pkg"]
    assert kept.read_bytes() == intact


_OMNI = textwrap.dedent(
    """\
    from fakeacc.runner_v1 import NPUModelRunner


    class R(NPUModelRunner):
        def forward(self, batch):
            pass
            tokens = self.prepare(batch)
            self.count: int | None = None
            return self.run(tokens)
    """
)


def test_sync_follows_upstream_drift_found_in_a_clone(cli: Cli, repo: Path, tmp_path: Path) -> None:
    """omni's edit is v2's code (it took upstream code early): sync onto v3 follows v3, says
    so (OP307) and records the history in the lock; `check` replays it."""
    source = tmp_path / "omni.py"
    source.write_text(_OMNI)
    patches, out, report = tmp_path / "p", tmp_path / "g", tmp_path / "report.json"
    base, target = f"{repo}@v1", f"{repo}@v3"
    extract = cli("extract", source, "--base", base, "--patches", patches)
    assert extract.exit_code == 0, extract.stderr
    sync = ("sync", "--patches", patches, "--upstream", target, "--out", out)
    result = cli(*sync, "--json", report)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert " OP307 " in result.stdout
    rows = {row["id"]: row for row in json.loads(report.read_text())["blocks"]}
    edit = rows["omni.R.forward.edit-01"]
    assert edit["status"] == "followed" and edit["decided_by"] == ["upstream-history"]
    assert edit["release"] == f"{repo}@v2"
    assert "self.count = None" in (out / "omni.py").read_text()
    lock = json.loads((out / "omni-port.lock").read_text())
    assert [h["label"] for h in lock["inputs"]["history"]][-1] == target
    # `check` regenerates with the lock's history: the output is current (the unmarked
    # edit itself is still reported, OP407).
    checked = cli("check", source, "--base", base, "--patches", patches, "--generated", out)
    assert " OP406 " not in checked.stdout and " OP407 " in checked.stdout, checked.stderr
    # Without history omni's edit and upstream's meet on the same statement: a conflict.
    plain = cli(*sync[:-1], tmp_path / "plain", "--history", "none", "--json", report)
    assert plain.exit_code == 1 and " OP301 " in plain.stdout
    rows = {row["id"]: row for row in json.loads(report.read_text())["blocks"]}
    assert rows["omni.R.forward.edit-01"]["status"] == "conflict"


def test_sync_and_check_list_an_upstream_change_the_runners_never_had(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    """omni's copy is based on v2 but still holds v1's code (`self.count = 0`), which v2
    changed: a lag. sync follows v3 there and names v2 as the release that brought the
    change; `check` lists it too (OP306, a note)."""
    source = tmp_path / "omni.py"
    source.write_text(
        _OMNI.replace("pass", "self.trace(batch)").replace(
            "self.count: int | None = None", "self.count = 0"
        )
    )
    patches, out = tmp_path / "p", tmp_path / "g"
    base, target = f"{repo}@v2", f"{repo}@v3"
    assert cli("extract", source, "--base", base, "--patches", patches).exit_code == 0
    report = tmp_path / "report.json"
    result = cli("sync", "--patches", patches, "--upstream", target, "--out", out, "--json", report)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert " OP306 " in result.stdout
    # A commit is named with its hash and subject (a tag's commit: the tag's subject).
    assert re.search(rf"{re.escape(str(repo))}@v2 \([0-9a-f]{{10}} v2\) changed", result.stdout)
    row = json.loads(report.read_text())["blocks"][0]
    assert row["status"] == "followed" and row["decided_by"] == ["upstream-history"]
    assert "self.count = None" in (out / "omni.py").read_text()
    checked = cli("check", source, "--base", base, "--patches", patches, "--generated", out)
    assert " OP306 " in checked.stdout and " OP406 " not in checked.stdout, checked.stdout


def test_upgrade_summary_names_the_rule_and_the_lags(cli: Cli, repo: Path, tmp_path: Path) -> None:
    """The upgrade summary shows who decided every block and lists upstream changes the
    runners never had, with the release that brought each."""
    source = tmp_path / "omni.py"
    source.write_text(
        _OMNI.replace("pass", "self.trace(batch)").replace(
            "self.count: int | None = None", "self.count = 0"
        )
    )
    summary = tmp_path / "up.md"
    result = cli(
        "upgrade", source, "--base", f"{repo}@v2", "--to", f"{repo}@v3",
        "--patches", tmp_path / "p", "--out", tmp_path / "g", "--summary", summary,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    text = summary.read_text()
    assert "| decided by |" in text
    # The newest code the runners held is the untagged commit's, just before v2.
    assert f"| followed (lines 12-12) | upstream-history ({repo}@" in text
    section = text.split("## Upstream changes the runners never had")[1].split("##")[0]
    assert "omni.R.forward.edit-01" in section
    assert re.search(rf"{re.escape(str(repo))}@v2 \([0-9a-f]{{10}} v2\) changed", section)


def test_upgrade_and_check_list_upstream_edits_of_code_omni_replaces(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    """A marked block replaces v2's `self.count: ...` line, which v3 edits: omni's code
    stands (decided by intent, no conflict), and upstream's edit is listed for review, as
    a diff in the upgrade summary and as a note of sync and of `check`."""
    source = tmp_path / "omni.py"
    marked = "# ---------- Omni-new ----------"
    source.write_text(
        _OMNI.replace("pass", "self.trace(batch)").replace(
            "self.count: int | None = None",
            f"{marked}\n        self.count = len(batch.stages)\n        {marked}",
        )
    )
    patches, out, summary = tmp_path / "p", tmp_path / "g", tmp_path / "up.md"
    report = tmp_path / "report.json"
    result = cli(
        "upgrade", source, "--base", f"{repo}@v2", "--to", f"{repo}@v3",
        "--patches", patches, "--out", out, "--summary", summary, "--json", report,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    (row,) = json.loads(report.read_text())["blocks"]
    assert row["status"] == "placed" and "intent" in row["decided_by"], row
    assert "self.count = len(batch.stages)" in (out / "omni.py").read_text()
    section = summary.read_text().split("## Review: upstream changed code omni replaces")[1]
    section = section.split("\n## ")[0]
    assert row["id"] in section
    # Each item names the line of the generated module it is about, as `path:line`.
    item = next(line for line in section.splitlines() if line.startswith("- `"))
    path, line = item[3:].split("`")[0].rsplit(":", 1)
    lines = Path(path).read_text().splitlines()
    assert "self.count = len(batch.stages)" in "".join(lines[int(line) - 1 : int(line) + 2])
    assert "  -self.count: int | None = None" in section, section
    assert "  +self.count = None" in section, section
    checked = cli("check", source, "--base", f"{repo}@v2", "--patches", patches, "--generated", out)
    assert " OP309 " in checked.stdout and row["id"] in checked.stdout, checked.stdout


def test_a_member_of_a_release_is_parsed_once(tmp_path: Path) -> None:
    """Members of history releases are parsed on their own and kept in the cache, their
    absence too; a second sync unpickles them."""
    from omni_port.sources import trees

    text = _runner("self.count = 0")
    found = trees.member_tree(text, "r1", "NPUModelRunner", "forward", tmp_path)
    assert found is not None and found.body.stmts[0].name == "forward"
    assert trees.member_tree(text, "r1", "NPUModelRunner", "missing", tmp_path) is None
    kept = sorted(p.name for p in (tmp_path / "trees").iterdir())
    assert len(kept) == 2 and any(".forward-" in name for name in kept)
    again = trees.member_tree(text, "r1", "NPUModelRunner", "forward", tmp_path)
    assert again is not None and again.text(again.body.stmts[0].start, again.body.stmts[0].end)


def test_sync_follows_a_block_through_the_commits_of_a_clone(cli: Cli, tmp_path: Path) -> None:
    """Between base and target a commit renamed the section's header and a later one
    rewrote its body: in one jump the block's place is a conflict; through the clone's
    commits (``PATH@REV`` history) the stepwise rule follows it, and says which commits."""
    rules = DATA / "rules" / "stepwise" / "yes_followed_through_each_release"
    root = tmp_path / "ascend"
    root.mkdir()
    _git(root, "init", "-q")
    _commit(root, (rules / "base.py").read_text(), "v1")
    renamed = _commit(root, (rules / "middle.py").read_text())
    _commit(root, (rules / "upstream.py").read_text(), "v2")
    source = tmp_path / "omni.py"
    shutil.copy(rules / "omni.py", source)
    patches, out = tmp_path / "p", tmp_path / "g"
    assert cli("extract", source, "--base", f"{root}@v1", "--patches", patches).exit_code == 0
    report = tmp_path / "report.json"
    args = ("sync", "--patches", patches, "--upstream", f"{root}@v2", "--generated", out)
    result = cli(*args, "--json", report)
    assert result.exit_code == 0, result.stdout + result.stderr
    (row,) = json.loads(report.read_text())["blocks"]
    assert row["status"] == "placed" and row["decided_by"] == ["stepwise"], row
    assert f"{root}@{renamed[:12]}" in row["reason"], row["reason"]
    # The lock names the revision the patches were extracted against, with its text's hash.
    lock = json.loads((out / "omni-port.lock").read_text())
    base_text = (rules / "base.py").read_bytes()
    assert lock["inputs"]["base"] == [
        {"label": f"{root}@v1", "sha256": hashlib.sha256(base_text).hexdigest()}
    ]
    jumped = cli(*args[:-2], "--generated", tmp_path / "g2", "--history", "none")
    assert jumped.exit_code == 1 and " OP301 " in jumped.stdout, jumped.stdout
