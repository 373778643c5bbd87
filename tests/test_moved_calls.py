"""What the output holds is what the rows say (docs/design.md rule 5, issue 32 item 6). A call moved
is moved, never duplicated: the engine's last step on a member counts the call statements
the decisions make, and a placed block that would run a call more often than both the new
upstream and the old runner is a conflict that says so. And an edit that upstream's own
statements stand for is a conflict when another block takes those statements.

The runners here are written for these tests: a base, the omni runner ported from it,
and a new upstream, with upstream history (base, then the new upstream) so the old
runner's counts are known.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from omni_port import api
from omni_port.model import Block, PatchSet, Release, Status
from omni_port.pyast.packages import call_counts
from omni_port.pyast.syntax import find_member
from omni_port.sources.textio import decode
from omni_port.sync.context import Decision
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.pipeline import SyncResult
from omni_port.sync.rules import order
from tests.golden import DATA
from tests.sync_cases import flag

BASE = """\
class NPUModelRunner:
    def step(self, x):
        y = self.prepare(x)
        out = self.build(y)
        self.record(out)
        return out
"""

#: Omni's block calls ``sync_device`` after the build and emits the stage's outputs.
OMNI = """\
from fakeacc.runner_v1 import NPUModelRunner


class OmniRunner(NPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        out = self.build(y)
        # ---------- Omni-new ----------
        self.sync_device()
        self.emit_stage(out)
        # ---------- Omni-new ----------
        self.record(out)
        return out
"""

#: Upstream now synchronizes the device itself, first thing in the step.
MOVED_UP = BASE.replace(
    "        y = self.prepare(x)\n", "        self.sync_device()\n        y = self.prepare(x)\n"
)


def _sync(omni: str, upstream: str, history: bool = True) -> SyncResult:
    base = api.parse_upstream(BASE, "base.py")
    target = api.parse_upstream(upstream, "upstream.py", "fakeacc.runner_v1")
    if history:
        releases = (Release("base.py", BASE), Release("upstream.py", upstream))
        target = replace(target, history=releases)
    extraction = api.extract_text(omni, "omni.py", base)
    return api.sync_patches(PatchSet((extraction.module,)), target, tool="t").result


def _step_calls(result: SyncResult) -> Counter[str]:
    tree = ast.parse(decode(result.files["omni.py"], "omni.py").text)
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    (step,) = [node for node in cls.body if isinstance(node, ast.FunctionDef)]
    return call_counts(step.body)


def _times(result: SyncResult, call: str) -> int:
    key = ast.dump(ast.parse(call).body[0])
    return _step_calls(result)[key]


def test_a_block_that_would_run_a_call_upstream_added_elsewhere_is_a_conflict() -> None:
    result = _sync(OMNI, MOVED_UP)
    (placement,) = result.placements
    assert placement.status is Status.CONFLICT
    assert "`self.sync_device()` would run 2 times in the method" in placement.reason
    assert "new upstream (1) and in the old runner (1)" in placement.reason
    # The note names the upstream change that made the counts differ (docs/design.md rule 6).
    assert "upstream moved or added it in upstream.py" in placement.reason
    assert _times(result, "self.sync_device()") == 1


def test_a_block_the_old_runner_already_ran_twice_stays_placed() -> None:
    """Two copies in the old runner are omni's choice, not a duplicate the sync made:
    the output may run the call as often as the old runner did."""
    twice = OMNI.replace(
        "        self.record(out)\n        return out\n",
        "        self.sync_device()\n        self.record(out)\n        return out\n",
    )
    result = _sync(twice, MOVED_UP)
    assert Status.CONFLICT not in {p.status for p in result.placements}
    # Omni's block keeps its copy; its lone second call is upstream's first one now.
    assert _times(result, "self.sync_device()") == 2


def test_an_upstream_that_keeps_the_call_where_it_was_leaves_the_block_placed() -> None:
    result = _sync(OMNI, BASE.replace("self.record(out)", "self.record(out, step=True)"))
    assert {p.status for p in result.placements} == {Status.PLACED}
    assert _times(result, "self.sync_device()") == 1


def test_without_upstream_history_the_old_runner_is_unknown_and_nothing_is_counted() -> None:
    """The old runner's counts come from the base in history; without it the step says
    nothing (verify's OP512 stays the net)."""
    result = _sync(OMNI, MOVED_UP, history=False)
    assert {p.status for p in result.placements} == {Status.PLACED}
    assert _times(result, "self.sync_device()") == 2


# --- a row says "placed" only when its code is in the output -----------------------------------


#: A longer method, and a runner with two edits of it (written for this test).
LONG = """\
class NPUModelRunner:
    def step(self, x):
        y = self.prepare(x)
        z = self.shape(y)
        out = self.build(z)
        self.record(out)
        self.flush(out)
        return out
"""
TWO_EDITS = (
    LONG.replace("class NPUModelRunner:", "class OmniRunner(NPUModelRunner):")
    .replace("self.shape(y)", "self.shape(y, stages=2)")
    .replace("self.flush(out)", "self.flush(out, sync=True)")
)


def _two_claims() -> tuple[Decision, Decision]:
    """Two edits of the old runner whose places are the same upstream statement: one
    placed over it, the other following upstream there (upstream made the same change)."""
    base = api.parse_upstream(LONG, "base.py")
    runner = "from fakeacc.runner_v1 import NPUModelRunner\n\n\n" + TWO_EDITS
    options = api.ExtractOptions(implicit=True)
    pieces = api.extract_text(runner, "omni.py", base, options).module.pieces
    blocks = [p for p in pieces if isinstance(p, Block)]
    member = find_member(base.tree, "NPUModelRunner", "step")
    assert member is not None and len(blocks) == 2, pieces
    slot = Slot(member.clauses[0], (), 1, 1)
    top = (Scored(slot, 1.0, 1.0),)
    placed = Decision(blocks[0], slot, 1.0, False, top)
    return placed, Decision(blocks[1], slot, 1.0, False, top, follow=True)


def test_an_edit_upstream_stands_for_is_a_conflict_when_another_block_takes_that_code() -> None:
    """An edit followed as upstream code (convergent: no release named) whose upstream
    statements another block replaces would say "placed" with nothing of it in the output:
    it is a conflict that names the block (issue 32, item 6)."""
    placed, followed = _two_claims()
    settled = order._one_owner_each([placed, followed])
    assert settled[0] == placed
    assert settled[1].conflict
    assert f"replaced by {placed.block.id}" in settled[1].reason
    assert "in the output nowhere" in settled[1].reason


def test_a_lag_followed_where_another_block_replaces_upstream_s_code_says_followed() -> None:
    """An edit that is an older release's code keeps status followed (upstream's code is
    what it stands for, not omni's): it owns none of the statements and gives them up."""
    placed, followed = _two_claims()
    lag = replace(followed, release="r0")
    settled = order._one_owner_each([placed, lag])
    assert not settled[1].conflict and settled[1].follow
    assert settled[1].slot is not None and settled[1].slot.span == 0


#: Runners that lack a guard upstream put before a call it moved there (a hand port of the
#: move without the guard): omni's copy stands 3 statements before upstream's.
SHIFTED = (
    DATA
    / "rules"
    / "run-once"
    / "yes_omni_s_copy_of_a_call_upstream_moved_past_code_the_runners_lacked"
)


def _shifted(edit: Callable[[str], str]) -> SyncResult:
    """The case's sync, every file (upstream history and the runner) passed through ``edit``."""
    labels = flag(SHIFTED, "order").split()
    texts = {label: edit((SHIFTED / label).read_text()) for label in labels}
    base = api.parse_upstream(texts["base.py"], "base.py")
    target = api.parse_upstream(texts["upstream.py"], "upstream.py", "fakeacc.runner_v1")
    target = replace(target, history=tuple(Release(label, texts[label]) for label in labels))
    extraction = api.extract_text(edit((SHIFTED / "omni.py").read_text()), "omni.py", base)
    return api.sync_patches(PatchSet((extraction.module,)), target, tool="t").result


def test_a_copy_shifted_past_code_the_runners_lacked_runs_once_where_upstream_has_it() -> None:
    result = _shifted(lambda text: text)
    shifted = result.placements[0]
    assert shifted.status is Status.FOLLOWED, shifted
    assert "is upstream's own copy, 3 statements off" in shifted.reason
    text = decode(result.files["omni.py"], "omni.py").text
    assert _times(result, "self.start_dump()") == 1
    assert text.index("if not tokens:") < text.index("self.start_dump()")


def test_a_copy_shifted_past_a_statement_that_calls_is_omni_s_order_and_a_conflict() -> None:
    """A statement between the two copies that calls something may depend on the order in
    which the two run: the shift may be omni's, so it stays a conflict."""
    result = _shifted(lambda text: text.replace("for i in ids]", "for i in sorted(ids)]"))
    shifted = result.placements[0]
    assert shifted.status is Status.CONFLICT
    assert "`self.start_dump()` would run 2 times in the method" in shifted.reason
    assert _times(result, "self.start_dump()") == 1
