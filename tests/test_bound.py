"""Base detection bounded by time (issue 46): no release newer than the upgrade's target,
no clone commit after the runners' release (tests/test_clone.py), but a release published
after the runners' release stays a candidate (ports copy upstream's main branch, which
later releases hold); ties to the newest. Synthetic releases on a
local index, their upload days in the release lists the cache keeps (as the index gives
them), on both platforms."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_port import api
from omni_port.api.inputs import Settings
from omni_port.model import Located
from omni_port.sources import history, upstream
from omni_port.sources.config import Config, with_platform
from omni_port.sources.platform import GPU, NPU, Platform
from omni_port.sources.textio import decode
from tests.conftest import Cli, LocalIndex


def _module(platform: Platform, *calls: str) -> bytes:
    """The platform's upstream runner module, whose ``forward`` makes ``calls``."""
    body = "".join(f"        self.{call}()\n" for call in calls)
    return f"class {platform.upstream_class}:\n    def forward(self):\n{body}".encode()


def _runners(platform: Platform, label: str, *calls: str) -> list[Located]:
    """Runners labelled ``label`` whose ``forward`` copies ``calls`` of upstream's."""
    text = _module(platform, *calls).replace(
        f"class {platform.upstream_class}:".encode(),
        f"class R({platform.upstream_class}):".encode(),
    )
    return [Located(label, "r.py", decode(text, "r.py"))]


def _kept(cache: Path, dist: str, days: dict[str, str]) -> None:
    """The release list of ``dist`` the cache keeps, with each release's upload day."""
    kept = cache / "versions" / f"{dist}.dated.txt"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text("".join(f"{v} {d}\n" for v, d in days.items()))


#: Two releases of the upstream: the second adds a call the runners copied.
OLD, NEW = ("prepare", "run", "finish"), ("prepare", "run", "check", "finish")


@pytest.fixture(params=[NPU, GPU], ids=lambda p: p.name.value)
def platform(request: pytest.FixtureRequest) -> Platform:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def releases(local_index: LocalIndex, platform: Platform, tmp_path: Path) -> Settings:
    """1.0.0 (2026-01-01) and 2.0.0 (2026-03-01) of the platform's upstream, and
    vllm-omni 1.0 (2026-02-01) between them."""
    local_index.wheel(platform.dist, "1.0.0", {platform.member: _module(platform, *OLD)})
    local_index.wheel(platform.dist, "2.0.0", {platform.member: _module(platform, *NEW)})
    cache = tmp_path / "cache"
    _kept(cache, platform.dist, {"1.0.0": "2026-01-01", "2.0.0": "2026-03-01"})
    _kept(cache, "vllm-omni", {"1.0": "2026-02-01"})
    return Settings(with_platform(Config(), platform.name.value), cache)


def test_a_release_published_after_the_runners_release_stays_a_candidate(
    releases: Settings, platform: Platform
) -> None:
    """vllm-omni 1.0 came out before 2.0.0 and matches it best: it copied upstream's main
    branch of its day, which only 2.0.0 holds. Measured on vLLM-Omni's GPU history, leaving
    such releases out paired omni releases with older vLLM ones and tripled the replay's
    wrong statements."""
    bases = api.rank_bases(_runners(platform, "vllm-omni==1.0", *NEW), releases)
    assert bases.ranked[0].label == f"{platform.dist}==2.0.0"
    assert bases.left_out == ()


def test_a_release_newer_than_the_target_is_no_base(releases: Settings, platform: Platform) -> None:
    target = f"{platform.dist}==1.0.0"
    bases = api.rank_bases(_runners(platform, "r.py", *NEW), releases, target=target)
    assert [s.label for s in bases.ranked] == [target]
    assert bases.left_out == ((f"{platform.dist}==2.0.0", f"newer than the target {target}"),)


def test_of_equal_scores_the_newest_is_the_base(
    local_index: LocalIndex, releases: Settings, platform: Platform
) -> None:
    """1.1.0 holds what 1.0.0 holds: the port was made from the newer one, which was out."""
    local_index.wheel(platform.dist, "1.1.0", {platform.member: _module(platform, *OLD)})
    days = {"1.0.0": "2026-01-01", "1.1.0": "2026-01-15", "2.0.0": "2026-03-01"}
    _kept(releases.cache, platform.dist, days)
    bases = api.rank_bases(_runners(platform, "vllm-omni==1.0", *OLD), releases)
    top = [s.label for s in bases.ranked[:2]]
    assert top == [f"{platform.dist}==1.1.0", f"{platform.dist}==1.0.0"]
    assert bases.ranked[0].similarity == bases.ranked[1].similarity


def test_bases_says_its_bound_and_asks_the_index_nothing(
    local_index: LocalIndex,
    releases: Settings,
    platform: Platform,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept lists name a release published after the runners' release: they were
    asked for since, and list every release out by then; the index is not asked again. The
    bound (on clone commits) is said on stderr."""
    copy = _runners(platform, "", *NEW)[0].source.text.encode()
    omni = {member: copy for member in platform.runners}
    local_index.wheel("vllm-omni", "1.0", omni)

    def refused(dist: str) -> dict[str, str]:
        raise AssertionError(f"the index was asked for the releases of {dist}")

    monkeypatch.setattr(upstream, "dated_releases", refused)
    args = ("--cache-dir", releases.cache, "bases", "--platform", platform.name.value)
    result = cli.loud(*args, "vllm-omni==1.0")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{platform.dist}==2.0.0\t")
    assert not any(line.startswith("left out:") for line in lines)
    assert "clone commits made by 2026-02-01 (vllm-omni==1.0)" in result.stderr


def test_a_kept_list_older_than_the_bound_is_asked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list that names no release after the day, and was not asked for after it, may
    lack releases out by then; once asked (the day kept beside it), it serves."""
    calls: list[str] = []

    def releases(dist: str) -> dict[str, str]:
        calls.append(dist)
        return {"1.0": "2026-01-01"}

    monkeypatch.setattr(history.upstream, "dated_releases", releases)
    _kept(tmp_path, "pkg", {"1.0": "2026-01-01"})
    assert history.known_releases("pkg", tmp_path, (), after="2026-02-01") == {"1.0": "2026-01-01"}
    assert calls == ["pkg"]
    asked = (tmp_path / "versions" / "pkg.asked.txt").read_text().strip()
    assert asked > "2026-02-01"
    history.known_releases("pkg", tmp_path, (), after="2026-02-01")
    history.known_releases("pkg", tmp_path, ())
    assert calls == ["pkg"], "asked since the day: the kept list serves"
    history.known_releases("pkg", tmp_path, (), after=asked)
    assert calls == ["pkg", "pkg"], "not asked after that day"


def test_candidates_are_read_a_few_at_once_and_kept_in_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cold base detection reads some thirty releases, each a few round trips to the
    index: read one after the other, they took 14 s of a cold GPU upgrade (6 s at once).
    No read waits for another: two meet at a barrier (serial reads never would)."""
    import threading

    from omni_port.api import workflows

    met = threading.Barrier(2, timeout=30)
    order: list[str] = []

    def located(text: str, settings: Settings) -> Located:
        if text.endswith(("1.0.0", "2.0.0")):
            met.wait()
        order.append(text)
        calls = NEW if text.endswith("2.0.0") else OLD
        return Located(text, NPU.member, decode(_module(NPU, *calls), text))

    monkeypatch.setattr(workflows, "locate_text", located)
    settings = Settings(Config(), tmp_path / "cache")
    wanted = ["vllm-ascend==2.0.0", "vllm-ascend==1.0.0"]
    bases = api.rank_bases(_runners(NPU, "r.py", *OLD), settings, wanted)
    assert sorted(order) == sorted(wanted)
    assert [s.label for s in bases.ranked] == ["vllm-ascend==1.0.0", "vllm-ascend==2.0.0"]


def test_of_equal_scores_after_the_runners_release_the_first_out_is_the_base(
    local_index: LocalIndex, releases: Settings, platform: Platform
) -> None:
    """2.0.0 and 2.1.0 hold the same code, both out after vllm-omni 1.0: the port copied
    main of its day, which 2.0.0 shipped first; 2.1.0 would date it later still. Ties go
    to the release nearest the runners' day (the newest would be 2.1.0)."""
    local_index.wheel(platform.dist, "2.1.0", {platform.member: _module(platform, *NEW)})
    days = {"1.0.0": "2026-01-01", "2.0.0": "2026-03-01", "2.1.0": "2026-04-01"}
    _kept(releases.cache, platform.dist, days)
    bases = api.rank_bases(_runners(platform, "vllm-omni==1.0", *NEW), releases)
    top = [s.label for s in bases.ranked[:2]]
    assert top == [f"{platform.dist}==2.0.0", f"{platform.dist}==2.1.0"]
    assert bases.ranked[0].similarity == bases.ranked[1].similarity
