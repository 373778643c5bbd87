"""A clone of vllm-ascend as upstream history (``upstream-repo``): its lineages, the history
between a base and a target, and bases ranked among its commits. Small git repositories
made here, a main line and a release branch; nothing online.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import Result

from omni_port import api
from omni_port.api import lineage
from omni_port.api.inputs import Settings
from omni_port.model import Located, PatchSet, Release, Status
from omni_port.pyast.parser import parse
from omni_port.sources import gitrepo, history
from omni_port.sources.config import Config
from omni_port.sources.textio import decode
from omni_port.sources.upstream import ASCEND_RUNNER
from tests.conftest import Cli
from tests.golden import DATA
from tests.test_history_sources import _ENV, _commit, _git


def _runner(*lines: str) -> str:
    """An upstream runner module whose ``forward`` holds ``lines``."""
    body = "\n".join(f"        {line}" for line in lines)
    return (
        textwrap.dedent(
            """\
        from fakeacc.runner import GPUModelRunner


        class NPUModelRunner(GPUModelRunner):
            def forward(self, batch):
        """
        )
        + body
        + "\n"
    )


#: The module the runners import the upstream class from.
RUNNER_MODULE = "vllm_ascend.worker.model_runner_v1"

#: The main line's runner, revision by revision: each adds a statement.
MAIN = (
    ("tokens = self.prepare(batch)", "return self.run(tokens)"),
    ("tokens = self.prepare(batch)", "self.check(tokens)", "return self.run(tokens)"),
    (
        "tokens = self.prepare(batch)",
        "self.check(tokens)",
        "self.trace(tokens)",
        "return self.run(tokens)",
    ),
    (
        "tokens = self.prepare(batch)",
        "self.check(tokens)",
        "self.trace(tokens)",
        "self.flush()",
        "return self.run(tokens)",
    ),
)


@pytest.fixture
def clone(tmp_path: Path) -> tuple[Path, list[str], str]:
    """A main line of four revisions (its second one tagged v1) and a release branch
    forked from the second one with a change of its own."""
    root = tmp_path / "ascend"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    commits = [
        _commit(root, _runner(*lines), "v1" if i == 1 else "") for i, lines in enumerate(MAIN)
    ]
    _git(root, "checkout", "-q", "-b", "releases/v1", commits[1])
    branched = _commit(root, _runner(*MAIN[1][:-1], "self.retry()", MAIN[1][-1]))
    _git(root, "checkout", "-q", "main")
    return root, commits, branched


def test_the_lineages_are_the_main_line_then_the_release_branches(
    clone: tuple[Path, list[str], str],
) -> None:
    root, commits, branched = clone
    assert [name for name, _ in gitrepo.lineages(str(root))] == ["main", "releases/v1"]
    assert gitrepo.first_parent(str(root), "main", ASCEND_RUNNER) == commits[::-1]
    assert gitrepo.on(str(root), commits[1], "releases/v1")
    assert not gitrepo.on(str(root), branched, "main")
    texts = gitrepo.texts(str(root), [commits[0], branched], ASCEND_RUNNER)
    assert "self.retry()" in texts[branched] and "self.check" not in texts[commits[0]]


def test_a_commit_names_its_pull_request() -> None:
    info = gitrepo.CommitInfo("0" * 40, "2026-08-21", "[Refactor] remove FlashComm v1 (#13946)")
    assert info.pr == "#13946"
    assert gitrepo.CommitInfo("0" * 40, "2026-08-21", "a fix").pr == ""


def test_history_from_a_clone_follows_the_base_s_lineage(
    clone: tuple[Path, list[str], str], tmp_path: Path
) -> None:
    """The commits before the base and after it on its lineage, up to the target; a bare
    mirror reads the same (a fetched snapshot has no working tree)."""
    root, commits, _ = clone
    base, target = f"{root}@v1", f"{root}@{commits[3][:12]}"
    names = history.labels(base, target, tmp_path / "cache", str(root))
    assert names == [
        gitrepo.label(str(root), commits[0]),
        base,
        gitrepo.label(str(root), commits[2]),
        target,
    ]
    bare = tmp_path / "bare"
    _git(tmp_path, "clone", "-q", "--bare", str(root), str(bare))
    names = history.labels(f"{bare}@v1", f"{bare}@{commits[3][:12]}", tmp_path / "c", str(bare))
    assert len(names) == 4 and names[1] == f"{bare}@v1"
    # A base the clone lacks: the history there is without one (here: between the two
    # revisions of the other clone).
    without = history.labels(base, target, tmp_path / "cache")
    assert history.labels(base, target, tmp_path / "cache", str(bare)) == without


def _located(text: str) -> Located:
    source = decode(text.encode(), "npu_model_runner.py")
    return Located("npu_model_runner.py", "npu_model_runner.py", source)


def test_bases_rank_the_clone_s_commits_and_name_their_lineage(
    clone: tuple[Path, list[str], str],
) -> None:
    """Runners copied from the main line's third revision: it ranks first, on main, and
    the best of the release branch is named apart."""
    root, commits, _ = clone
    omni = _runner(*MAIN[2]).replace("class NPUModelRunner(GPUModelRunner)", "class R(X)")
    settings = Settings(Config(upstream_repo=str(root), upstream_class="NPUModelRunner"))
    bases = api.rank_bases([_located(omni)], settings)
    best = bases.ranked[0]
    assert best.label == f"{root}@{commits[2][:12]}" and best.lineage == "main"
    other = bases.runner_up()
    assert other is not None and other.lineage == "releases/v1"


def test_an_upgrade_with_a_clone_pins_it_so_later_syncs_weigh_the_same_history(
    clone: tuple[Path, list[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    """`--upstream-repo` on the upgrade is pinned with the base and the target: a plain
    `sync --check` afterwards weighs the clone's commits too, and agrees byte for byte."""
    root, commits, _ = clone
    work = tmp_path / "work"
    work.mkdir()
    omni = _runner(MAIN[1][0], "self.omni_step(tokens)", *MAIN[1][1:])
    omni = omni.replace("class NPUModelRunner(GPUModelRunner)", "class R(NPUModelRunner)")
    omni = omni.replace("fakeacc.runner import GPUModelRunner", "X import NPUModelRunner")
    (work / "omni.py").write_text(omni.replace("X import", f"{RUNNER_MODULE} import"))
    (work / "pyproject.toml").write_text(
        f'[tool.omni-port]\nsource = "omni.py"\nupstream = "{root}@v1"\n'
    )
    monkeypatch.chdir(work)
    target = f"{root}@{commits[3][:12]}"
    upgraded = cli("--upstream-repo", root, "upgrade", "--base", "detect", "--to", target)
    assert upgraded.exit_code == 0, upgraded.stdout + upgraded.stderr
    config = (work / "pyproject.toml").read_text()
    assert f'upstream-repo = "{root.as_posix()}"' in config, config
    assert f'base = "{root}@v1"' in config or f'base = "{root}@{commits[1][:12]}"' in config
    checked = cli("sync", "--check")
    assert checked.exit_code == 0, checked.stdout + checked.stderr


#: One upstream change with two hunks in ``forward`` (the second commit), then another.
_KEPT = ("batch.validate()", "tokens = self.prepare(batch)", "self.stats.update(batch)")
HALVES = (
    (*_KEPT, "self.check(tokens)", "self.count(tokens)", "return self.run(tokens)"),
    (
        *_KEPT,
        "self.check(tokens, strict=True)",
        "self.count(tokens)",
        "return self.run(tokens, mode=1)",
    ),
    (
        *_KEPT,
        "self.check(tokens, strict=True)",
        "self.count(tokens)",
        "self.flush()",
        "return self.run(tokens, mode=1)",
    ),
)

#: Runners copied from the first revision, with omni's own marked code for the return.
MARKER = "# ---------- Omni-new ----------"
HALF_OMNI = _runner(*HALVES[0][:-1], MARKER, "return self.run_stages(tokens)", MARKER)


def _halves(root: Path) -> list[str]:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    return [_commit(root, _runner(*lines)) for lines in HALVES]


def test_an_upstream_commit_is_followed_whole_or_is_a_conflict_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    """The runners lag behind a commit at one hunk (its `check`) and keep omni's code over
    its other hunk (the `return`): following the first and keeping the second would take
    half of the commit. With the clone both are conflicts that name the commit and list
    its hunks (docs/design.md rule 5)."""
    root = tmp_path / "ascend"
    commits = _halves(root)
    omni = HALF_OMNI.replace("class NPUModelRunner(GPUModelRunner)", "class R(NPUModelRunner)")
    omni = omni.replace(
        "fakeacc.runner import GPUModelRunner", f"{RUNNER_MODULE} import NPUModelRunner"
    )
    source = tmp_path / "omni.py"
    source.write_text(omni)
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.json"
    base, target = f"{root}@{commits[1][:12]}", f"{root}@{commits[2][:12]}"
    result = cli(
        "--upstream-repo", root, "upgrade", source, "--base", base, "--to", target,
        "--patches", tmp_path / "p", "--generated", tmp_path / "g", "--json", report,
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    rows = json.loads(report.read_text())["blocks"]
    assert [row["status"] for row in rows] == ["conflict", "conflict"], rows
    for row in rows:
        assert "would be followed by half in this method" in row["reason"], row
        assert f"@{commits[1][:12]}" in row["reason"] and "edit-01, block-01" in row["reason"]


def test_with_releases_alone_a_split_release_is_said_of_the_edit_it_leaves() -> None:
    """The same history as releases: a release is the diff of many commits, so the edit
    omni's code holds stays placed, and its reason says what releases cannot tell."""
    labels = ("r0", "r1", "r2")
    texts = [_runner(*lines) for lines in HALVES]
    base = api.parse_upstream(texts[1], "r1")
    target = api.parse_upstream(texts[2], "r2", "fakeacc.runner_v1")
    releases = tuple(Release(label, text) for label, text in zip(labels, texts, strict=True))
    target = replace(target, history=releases)
    omni = HALF_OMNI.replace("class NPUModelRunner(GPUModelRunner)", "class R(NPUModelRunner)")
    omni = omni.replace(
        "fakeacc.runner import GPUModelRunner", "fakeacc.runner_v1 import NPUModelRunner"
    )
    module = api.extract_text(omni, "omni.py", replace(base, label="r1")).module
    result = api.sync_patches(PatchSet((module,)), target, tool="t").result
    fates = {p.block_id.rsplit(".", 1)[-1]: p for p in result.placements}
    assert fates["edit-01"].status is Status.FOLLOWED
    assert fates["block-01"].status is Status.PLACED
    assert "r1 also brought code another edit here follows (edit-01)" in fates["block-01"].reason


def test_a_branch_names_the_commit_it_is_at(clone: tuple[Path, list[str], str]) -> None:
    """`PATH@main` moves with the branch: read now, it is the commit main is at (a tag when
    it has one), so a pinned base or target, a lock and a note name a fact. A tag or a
    hash stays as given."""
    root, commits, _ = clone
    settings = Settings(Config(upstream_repo=str(root)))
    assert api.load_upstream(f"{root}@main", settings).label == f"{root}@{commits[3][:12]}"
    assert api.load_upstream(f"{root}@v1", settings).label == f"{root}@v1"
    assert api.load_upstream(f"{root}@releases/v1", settings).label != f"{root}@releases/v1"
    assert api.load_upstream(f"{root}@{commits[2][:12]}", settings).label.endswith(commits[2][:12])


def _upgrade_case(tmp_path: Path, cli: Cli, case: Path) -> tuple[Path, str, Result]:
    """A rule case's base and upstream as two commits of a clone, and the upgrade of its
    omni module from one to the other (run in ``tmp_path``: patches ``p``, runners ``g``,
    summary ``up.md``): the clone, the target commit and the upgrade's result."""
    root = tmp_path / "ascend"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    base, target = (_commit(root, (case / name).read_text()) for name in ("base.py", "upstream.py"))
    omni = (case / "omni.py").read_text().replace("fakeacc.runner_v1", RUNNER_MODULE)
    (tmp_path / "omni.py").write_text(omni)
    result = cli(
        "--upstream-repo", root, "upgrade", "omni.py", "--base", f"{root}@{base[:12]}",
        "--to", f"{root}@{target[:12]}", "--patches", "p", "--generated", "g",
        "--summary", "up.md",
    )  # fmt: skip
    return root, target, result


def _section(summary: str, heading: str) -> str:
    """The items of one section of an upgrade summary."""
    return summary.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]


def test_a_binding_a_block_carries_is_listed_for_review(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    """A commit took out a binding a marked block reads: the block carries it (OP313), and
    the upgrade summary lists it for the maintainer to review, not as an unverified note."""
    case = (
        DATA
        / "rules"
        / "carried-binding"
        / "yes_a_block_carries_a_binding_upstream_took_out_of_the_method"
    )
    monkeypatch.chdir(tmp_path)
    _, _, result = _upgrade_case(tmp_path, cli, case)
    assert "OP313" in result.stdout + result.stderr, result.stdout + result.stderr
    assert "timing = self.config.timing" in (tmp_path / "g" / "omni.py").read_text()
    summary = (tmp_path / "up.md").read_text()
    listed = _section(summary, "Review: upstream bindings omni's code carries")
    assert "R.sample.block-01" in listed and "`timing = self.config.timing`" in listed
    assert "notes: imports or attributes left unverified" not in summary


#: A commit added a return where omni runs its code before every other return (OP314).
EARLY_EXIT = (
    DATA / "rules" / "early-exit" / "yes_an_upstream_return_skips_omni_s_code_at_every_other_return"
)


#: The workspace of an upgrade of ``EARLY_EXIT`` (`_upgrade_case`), for `verify`.
EARLY_EXIT_CONFIG = '[tool.omni-port]\nsource = "omni.py"\npatches = "p"\ngenerated = "g"\n'


def test_an_upstream_return_that_skips_omni_s_code_is_listed_for_review(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    """A commit added a return where omni runs its code before every other return: the
    upgrade summary lists it for review under its own heading (OP314), and `check`
    lists it too, naming the omni code it skips."""
    monkeypatch.chdir(tmp_path)
    root, target, result = _upgrade_case(tmp_path, cli, EARLY_EXIT)
    assert "OP314" in result.stdout + result.stderr, result.stdout + result.stderr
    listed = _section(
        (tmp_path / "up.md").read_text(), "Review: upstream exits that skip omni's code"
    )
    assert "`return self.pending(tokens)`" in listed
    assert "block-02 (`self.hand_off(batch)`)" in listed
    checked = cli(
        "--upstream-repo", root, "check", "omni.py", "--patches", "p", "--generated", "g",
        "--upstream", f"{root}@{target[:12]}", "--no-cache",
    )  # fmt: skip
    assert "OP314" in checked.stdout, checked.stdout + checked.stderr


def test_verify_lists_the_early_exit_notes_sync_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    """`verify` does not sync again: it lists the OP314 notes the sync recorded beside the
    lock (`omni-port.notes`), at their lines of the generated module, as notes (not
    problems), as `check` does."""
    monkeypatch.chdir(tmp_path)
    root, _, result = _upgrade_case(tmp_path, cli, EARLY_EXIT)
    said = [line for line in result.stdout.splitlines() if " OP314 " in line]
    assert len(said) == 1, result.stdout + result.stderr
    (tmp_path / "pyproject.toml").write_text(EARLY_EXIT_CONFIG)
    verified = cli.loud("--upstream-repo", root, "verify", "--json", "v.json")
    listed = [line for line in verified.stdout.splitlines() if " OP314 " in line]
    assert listed == said, verified.stdout + verified.stderr
    assert listed[0].startswith("g/omni.py:11:"), listed
    rows = json.loads((tmp_path / "v.json").read_text())["findings"]
    assert [r["severity"] for r in rows if r["code"] == "OP314"] == ["note"], rows
    # The fixture's blocks call a hook its upstream does not define: OP509, not this note.
    assert {r["code"] for r in rows if r["severity"] == "error"} == {"OP509"}, rows
    # The upgrade summary counts verify's notes as verify lists them.
    section = _section((tmp_path / "up.md").read_text(), "Verification of the generated runners")
    assert "- 1 note of `omni-port verify`: 1 OP314 " in section, section
    # They quote code: kept beside the lock, which hashes them as it hashes the modules.
    lock = json.loads((tmp_path / "g" / "omni-port.lock").read_text())
    assert "omni-port.notes" in lock["outputs"] and "pending" not in json.dumps(lock)


@pytest.mark.parametrize(
    ("row", "named"),
    [
        pytest.param({"code": "OP301"}, "'notes.code' \"OP301\"", id="a-code-sync-does-not-keep"),
        pytest.param({"line": "11"}, "'notes.line' \"11\"", id="a-line-that-is-no-number"),
        pytest.param({"message": 3}, "'message' must be a string", id="a-message-that-is-no-text"),
    ],
)
def test_a_broken_notes_file_is_one_line_naming_what_is_wrong(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Cli,
    row: dict[str, object],
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    root, _, _ = _upgrade_case(tmp_path, cli, EARLY_EXIT)
    notes = tmp_path / "g" / "omni-port.notes"
    data = json.loads(notes.read_text())
    data["notes"][0].update(row)
    text = json.dumps(data, indent=2, sort_keys=True)
    notes.write_text(text)
    (tmp_path / "pyproject.toml").write_text(EARLY_EXIT_CONFIG)
    result = cli("--upstream-repo", root, "verify")
    assert result.exit_code == 2, result.stdout + result.stderr
    key = f'"{next(iter(row))}":'
    line = next(n for n, text in enumerate(text.split("\n"), 1) if key in text)
    (said,) = result.stderr.strip().splitlines()
    assert said.startswith(f"g/omni-port.notes:{line}:1: OP201 not an omni-port notes file: ")
    assert named in said, said


def _dated(root: Path, text: str, day: str) -> str:
    """A commit of ``text`` as the runner module, made on ``day`` (YYYY-MM-DD)."""
    (root / ASCEND_RUNNER).parent.mkdir(parents=True, exist_ok=True)
    (root / ASCEND_RUNNER).write_text(text)
    when = f"{day}T12:00:00"
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    for args in (("add", "-A"), ("commit", "-q", "-m", f"change of {day}")):
        subprocess.run(["git", "-C", str(root), *args], env={**_ENV, **env}, check=True)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def dated(tmp_path: Path) -> tuple[Path, list[str], str]:
    """The main line's four revisions a month apart from 2026-01-10, and a release branch
    forked from the second one with a change of its own on 2026-02-20."""
    root = tmp_path / "dated"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    days = ("2026-01-10", "2026-02-10", "2026-03-10", "2026-04-10")
    commits = [_dated(root, _runner(*lines), day) for lines, day in zip(MAIN, days, strict=True)]
    _git(root, "checkout", "-q", "-b", "releases/v1", commits[1])
    branched = _dated(root, _runner(*MAIN[1][:-1], "self.retry()", MAIN[1][-1]), "2026-02-20")
    _git(root, "checkout", "-q", "main")
    return root, commits, branched


def test_bases_as_of_a_day_rank_only_the_commits_made_by_then(
    dated: tuple[Path, list[str], str],
) -> None:
    """A maintainer upgrading on 2026-03-15 had the main line up to its third revision:
    runners copied from the fourth are explained best by the third then."""
    root, commits, _ = dated
    omni = _runner(*MAIN[3]).replace("class NPUModelRunner(GPUModelRunner)", "class R(X)")
    settings = Settings(Config(upstream_repo=str(root), upstream_class="NPUModelRunner"))
    runners = [parse(omni, "npu_model_runner.py")]
    keys, lines = lineage.candidates(runners, settings, until="2026-03-15")
    assert f"{root}@{commits[3][:12]}" not in keys
    best = lineage.ranked(runners, keys, lines)[0]
    assert best.label == f"{root}@{commits[2][:12]}" and best.lineage == "main"
    keys, _ = lineage.candidates(runners, settings)
    assert f"{root}@{commits[3][:12]}" in keys


def test_history_to_a_target_on_another_lineage_stops_at_its_day(
    dated: tuple[Path, list[str], str], tmp_path: Path
) -> None:
    """The base is on the main line and the target on a release branch: the main line's
    commits made after the target are no part of the way to it."""
    root, commits, branched = dated
    base, target = f"{root}@{commits[0][:12]}", f"{root}@{branched[:12]}"
    names = history.labels(base, target, tmp_path / "cache", str(root))
    assert names == [base, gitrepo.label(str(root), commits[1]), target]


@pytest.fixture
def released(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Upstream as vllm-ascend cuts releases: main m0..m4; v1 on ``releases/v1``, forked
    at m1 with a backport (as v0.18.0 on ``releases/v0.18.0``); v2 a main-line release
    tagged on a commit that leaves the runner alone (v0.19.1rc1); v2.1 on ``releases/v2.1``,
    forked at m3 with a backport (a side-branch release after the base's); v3 on
    ``releases/v3``, forked at m4 with a fix of its own (the target, v0.23.0)."""
    root = tmp_path / "released"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    found: dict[str, str] = {}
    for n in range(2):
        found[f"m{n}"] = _commit(root, _runner(f"self.step({n})", "return batch"))
    found["m2"] = _commit(root, _runner("self.step(2)", "return batch"))
    found["v2"] = _commit(root, "# v2\n", "v2", path="README.md")
    for n in (3, 4):
        found[f"m{n}"] = _commit(root, _runner(f"self.step({n})", "return batch"))
    branches = (("v1", "m1", "self.step(1, safe=True)"), ("v2.1", "m3", "self.step(3, x=1)"))
    for tag, fork, line in (*branches, ("v3", "m4", "self.step(4, fixed=True)")):
        _git(root, "checkout", "-q", "-b", f"releases/{tag}", found[fork])
        found[tag] = _commit(root, _runner(line, "return batch"), tag)
    _git(root, "checkout", "-q", "main")
    return root, found


def test_history_from_a_clone_goes_through_every_release_after_the_base(
    released: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """A base on a release branch does not hide the main line's releases after it (main
    had: v1's branch, whose last commit is newest, only). The way to the target is what
    the target holds and the base does not, each commit after the releases that came
    before it (the first release, by version, that holds it by ancestry): m2, v2, then m3
    and v2.1's backport on its side branch, then m4 for v3; a release tagged on a commit
    that changes nothing of the runner is a stop of the way all the same."""
    root, found = released
    names = history.labels(f"{root}@v1", f"{root}@v3", tmp_path / "cache", str(root))
    label = {name: gitrepo.label(str(root), commit) for name, commit in found.items()}
    assert label["v2"] == f"{root}@v2" and label["v2.1"] == f"{root}@v2.1"
    expected = ["m0", "m1", "v1", "m2", "v2", "m3", "v2.1", "m4", "v3"]
    assert names == [f"{root}@v1" if n == "v1" else label[n] for n in expected]


def test_history_from_a_main_line_base_reaches_the_release_branches_after_it(
    released: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """A base on the main line between two releases: the side-branch release cut before it
    (v1) is not after it; v2.1, cut after it, is."""
    root, found = released
    base = f"{root}@{found['m2'][:12]}"
    names = history.labels(base, f"{root}@v3", tmp_path / "cache", str(root))
    label = {name: gitrepo.label(str(root), commit) for name, commit in found.items()}
    expected = [label["m0"], label["m1"], base, *(label[n] for n in ("v2", "m3", "v2.1", "m4"))]
    assert names == [*expected, f"{root}@v3"]


def test_a_main_line_commit_before_the_branch_point_is_the_main_line_s(
    clone: tuple[Path, list[str], str],
) -> None:
    """A release branch's first-parent history reaches back through the main line before
    its branch point: those commits are labelled main, not the branch."""
    root, commits, branched = clone
    omni = _runner(*MAIN[0]).replace("class NPUModelRunner(GPUModelRunner)", "class R(X)")
    settings = Settings(Config(upstream_repo=str(root), upstream_class="NPUModelRunner"))
    bases = api.rank_bases([_located(omni)], settings)
    lineages = {score.label: score.lineage for score in bases.ranked}
    assert lineages[gitrepo.label(str(root), commits[0])] == "main"
    assert lineages[gitrepo.label(str(root), commits[1])] == "main"
    assert lineages[gitrepo.label(str(root), branched)] == "releases/v1"


def _two_methods(forward: Sequence[str], sample: Sequence[str]) -> str:
    """An upstream runner module with ``forward`` and ``sample`` holding the given lines."""
    sampled = "\n".join(f"        {line}" for line in sample)
    return _runner(*forward) + f"\n    def sample(self, logits):\n{sampled}\n"


#: ``forward`` grows on the main line; ``sample`` changes on a release branch, and the main
#: line later replaces two of its statements.
_FORWARD = ("tokens = self.prepare(batch)", "self.check(tokens)", "return self.run(tokens)")
_SAMPLE = ("probs = self.softmax(logits)", "ids = self.pick(probs)", "return ids")
_GROWN = (*_FORWARD[:-1], "self.trace(tokens)", "self.flush()", _FORWARD[-1])
_BRANCH_SAMPLE = (*_SAMPLE[:-1], "self.clip(ids)", "self.record(ids)", _SAMPLE[-1])
_MAIN_SAMPLE = ("ids = self.fused_pick(logits)", _SAMPLE[-1])


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[Path, list[str], str]:
    """Main: v1, then `forward` grown, then `sample` replaced; releases/v1 forked at v1
    changes `sample` its own way."""
    root = tmp_path / "mixed"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    first = _commit(root, _two_methods(_FORWARD, _SAMPLE), "v1")
    grown = _commit(root, _two_methods(_GROWN, _SAMPLE))
    replaced = _commit(root, _two_methods(_GROWN, _MAIN_SAMPLE))
    _git(root, "checkout", "-q", "-b", "releases/v1", first)
    branched = _commit(root, _two_methods(_FORWARD, _BRANCH_SAMPLE))
    _git(root, "checkout", "-q", "main")
    return root, [first, grown, replaced], branched


def _omni(forward: Sequence[str], sample: Sequence[str]) -> Located:
    text = _two_methods(forward, sample)
    return _located(text.replace("class NPUModelRunner(GPUModelRunner)", "class R(X)"))


@pytest.mark.parametrize(
    ("sample", "commit"),
    [
        pytest.param(_BRANCH_SAMPLE, "branched", id="from-a-release-branch"),
        pytest.param(_SAMPLE, "older", id="from-code-the-main-line-replaced"),
    ],
)
def test_bases_name_a_method_copied_from_another_lineage_or_an_older_commit(
    mixed: tuple[Path, list[str], str], sample: Sequence[str], commit: str
) -> None:
    """`forward` copied from the main line's newest, `sample` from elsewhere: the best base
    is on main, and `sample` is a piecewise line naming where it matches best, by
    statements."""
    root, commits, branched = mixed
    settings = Settings(Config(upstream_repo=str(root), upstream_class="NPUModelRunner"))
    bases = api.rank_bases([_omni(_GROWN, sample)], settings)
    best = bases.ranked[0]
    assert (best.label, best.lineage) == (gitrepo.label(str(root), commits[2]), "main")
    (piece,) = bases.pieces
    expected = ("R", "sample", len(sample), len(sample), 1)
    assert (piece.owner, piece.method, piece.statements, piece.matched, piece.at_best) == expected
    if commit == "branched":
        assert (piece.label, piece.lineage) == (gitrepo.label(str(root), branched), "releases/v1")
    else:
        assert piece.lineage == "main"
        assert piece.label in {gitrepo.label(str(root), c) for c in commits[:2]}
    assert str(piece) == (
        f"R.sample matches {piece.label} on {piece.lineage} ({len(sample)} of {len(sample)} "
        f"statements) better than {best.label} (1)"
    )


def test_bases_print_the_piecewise_lines_of_releases(
    mixed: tuple[Path, list[str], str], tmp_path: Path, cli: Cli
) -> None:
    """Without a clone, candidates given as files: the method another one explains better
    by two statements or more is a `piecewise:` line; one statement is not enough."""
    newest = tmp_path / "newest.py"
    newest.write_text(_two_methods(_GROWN, _MAIN_SAMPLE))
    branch = tmp_path / "branch.py"
    branch.write_text(_two_methods(_FORWARD, _BRANCH_SAMPLE))
    runner = tmp_path / "omni.py"
    omni = _two_methods(_GROWN, (*_SAMPLE[:-1], "self.clip(ids)", _SAMPLE[-1]))
    runner.write_text(omni.replace("class NPUModelRunner(GPUModelRunner)", "class R(X)"))
    shown = cli("bases", runner, "--candidates", f"{newest},{branch}")
    assert shown.exit_code == 0, shown.stdout + shown.stderr
    assert "piecewise: R.sample matches " in shown.stdout
    assert f"{branch.name} (4 of 4 statements) better than " in shown.stdout
    # The branch holds 3 of these 4, the newest 2: one statement is no piecewise port.
    close = _two_methods(_GROWN, (_MAIN_SAMPLE[0], *_BRANCH_SAMPLE[2:]))
    runner.write_text(close.replace("class NPUModelRunner(GPUModelRunner)", "class R(X)"))
    assert "piecewise:" not in cli("bases", runner, "--candidates", f"{newest},{branch}").stdout


def test_a_clone_s_commits_after_the_runners_release_are_no_candidates(
    dated: tuple[Path, list[str], str], tmp_path: Path
) -> None:
    """issue 46: vllm-omni 1.0 came out on 2026-03-15: runners that copy the main line's fourth
    revision (2026-04-10) were ported from the third, the newest then."""
    root, commits, _ = dated
    cache = tmp_path / "cache"
    (cache / "versions").mkdir(parents=True)
    (cache / "versions" / "vllm-omni.dated.txt").write_text("1.0 2026-03-15\n")
    omni = _runner(*MAIN[3]).replace("class NPUModelRunner(GPUModelRunner)", "class R(X)")
    runners = [Located("vllm-omni==1.0", "r.py", decode(omni.encode(), "r.py"))]
    settings = Settings(Config(upstream_repo=str(root), upstream_class="NPUModelRunner"), cache)
    bases = api.rank_bases(runners, settings)
    labels = [s.label for s in bases.ranked]
    assert f"{root}@{commits[3][:12]}" not in labels
    assert labels[0] == f"{root}@{commits[2][:12]}"
    assert bases.bound.until == "2026-03-15"
