"""Real release history as a gate: replay public upgrades and compare with the maintainers.

Each step extracts release N's runners against the vllm-ascend release they were copied
from, syncs them onto the release release M was copied from (with the upstream history in
between, as ``history = auto`` picks it) and scores every block and edit both releases
hold (``bench/score.py``). No block may be placed wrongly or lost; a conflict whose right
place is a candidate is fine. The floors are this engine's own figures (issue 15): a
change that makes fewer blocks come out right fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.history import History
from bench.replay import Step, run_omni_port

pytestmark = pytest.mark.real


@pytest.mark.parametrize(
    ("step", "marked_floor", "edits_floor"),
    [
        # Consecutive releases: 20 of 20 marked blocks, 68 of 72 edits (4 followed lags).
        pytest.param(Step("0.28.0", "0.30.0", "0.25.1rc1", "0.26.0rc1"), 20, 68, id="0.28-0.30"),
        # The step where the maintainers moved a block their GPU runner placed elsewhere:
        # 11 of 13 marked blocks, 13 of 14 edits; that block is a conflict, never wrong.
        pytest.param(Step("0.18.0", "0.20.0", "0.18.0", "0.19.1rc1"), 11, 13, id="0.18-0.20"),
        # A long step that skips four releases: 15 of 17, 17 of 18 (the rest flagged).
        pytest.param(Step("0.20.0", "0.30.0", "0.19.1rc1", "0.26.0rc1"), 15, 17, id="0.20-0.30"),
    ],
)  # fmt: skip
def test_replayed_upgrade_places_every_block_right_or_flags_it(
    cache_dir: Path, step: Step, marked_floor: int, edits_floor: int
) -> None:
    run = run_omni_port(History(cache_dir), step, implicit=True)
    for tally, floor in ((run.marked, marked_floor), (run.edits, edits_floor)):
        bad = [row for row in tally.rows if row[1] in ("wrong", "missing")]
        assert not bad, bad
        assert tally.counts["correct"] >= floor, tally.rows
    # Some of them were decided by evidence beyond the anchor.
    assert run.rules["upstream-history"] + run.rules["merge3"] > 0, run.rules
