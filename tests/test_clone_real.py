"""A real clone of vllm-ascend as upstream history: only when one is named.

``OMNI_PORT_ASCEND_GIT`` names a local clone (a bare one will do: ``git clone --mirror
https://github.com/vllm-project/vllm-ascend``). Without it these tests skip: CI needs no
clone, and the synthetic repositories of ``test_clone.py`` test the same code offline.
What a clone holds depends on when it was fetched, so the assertions are about structure:
the lineage of the best commit, the runner-up of another lineage, notes that name commits.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bench.history import ASCEND_CANDIDATES, History
from bench.replay import plan_steps, run_omni_port
from omni_port import api
from omni_port.api.inputs import Settings
from omni_port.sources.config import Config

CLONE = os.environ.get("OMNI_PORT_ASCEND_GIT", "")

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(not CLONE, reason="OMNI_PORT_ASCEND_GIT names no clone of vllm-ascend"),
]

#: The runners a clone's commits are ranked for.
RUNNERS = "vllm-omni==0.30.0"


def _settings(cache_dir: Path) -> Settings:
    return Settings(Config(upstream_repo=str(Path(CLONE).resolve())), cache_dir)


def test_bases_rank_the_clone_s_commits_with_their_lineage(cache_dir: Path) -> None:
    """The best base is a revision of the clone (or a release newer than it) on a named
    lineage, and it explains the runners at least as well as the best release does: a
    clone adds candidates, it never takes a better one away."""
    settings = _settings(cache_dir)
    runners = api.load_runners([RUNNERS], settings)
    bases = api.rank_bases(runners, settings)
    best = bases.ranked[0]
    if best.label.startswith(str(Path(CLONE).resolve())):
        assert re.search(r"@[0-9a-f]{12}$|@v\d", best.label), best.label
        assert best.lineage, best
        other = bases.runner_up()
        assert other is None or other.lineage != best.lineage, other
    releases = api.rank_bases(runners, Settings(Config(), cache_dir)).ranked[0]
    assert best.similarity >= releases.similarity - 1e-9, (best, releases)


def test_the_upstream_history_of_a_clone_names_commits(cache_dir: Path) -> None:
    """With a clone, the history sync reads is the clone's commits (newer releases after
    them): labels a note can name, ``PATH@<commit>`` or ``PATH@TAG``."""
    settings = _settings(cache_dir)
    runners = api.load_runners([RUNNERS], settings)
    best = api.rank_bases(runners, settings).ranked[0]
    upstream = api.load_upstream("vllm-ascend==0.30.0rc2", settings)
    patch_set, _ = api.extract(
        runners, api.load_upstream(best.label, settings), api.ExtractOptions(lenient=True)
    )
    loaded, notes = api.inputs.with_history(upstream, settings, patch_set)
    labels = [release.label for release in loaded.history]
    assert not notes, notes
    clone = str(Path(CLONE).resolve())
    commits = [label for label in labels if label.startswith(f"{clone}@")]
    assert commits, labels
    assert labels[-1] == upstream.label


def test_a_replay_as_of_the_day_with_the_clone_places_no_block_wrong(cache_dir: Path) -> None:
    """`bench/replay.py --base detect --upstream-repo CLONE` on 0.24.0 -> 0.26.0: OLD's base
    detected among the clone's commits made by the day 0.26.0 came out, history from the
    clone; no block placed wrongly or lost (a conflict is fine)."""
    history = History(cache_dir, every=True, repo=str(Path(CLONE).resolve()))
    (step,) = plan_steps(history, ASCEND_CANDIDATES, ["0.24.0:0.26.0"], detect=True)
    run = run_omni_port(history, step, implicit=True)
    for tally in (run.marked, run.edits):
        bad = [row for row in tally.rows if row[1] in ("wrong", "missing")]
        assert not bad, bad
        assert tally.counts["correct"], tally.rows
