"""An unmarked edit that holds an older upstream revision's code beside omni's own lines
(``sync.evidence.older_code``), read directly on the golden case's runners: which part
is upstream's older code, which is omni's, and the edit restated against the base."""

from __future__ import annotations

from dataclasses import replace

from omni_port.api.inputs import with_members
from omni_port.model import Block, Copy, PatchSet
from omni_port.sync.evidence import older_code
from omni_port.sync.facts import ModuleFacts
from tests.golden import DATA
from tests.sync_cases import inputs

CASE = (
    DATA
    / "rules"
    / "upstream-history"
    / "yes_older_code_in_an_edit_follows_its_change_omni_s_lines_stay"
)


def _found(omni_code: str | None = None) -> older_code.OlderCode | None:
    """What the evidence finds for the case's edit (with ``omni_code`` for its code)."""
    patches, upstream, _ = inputs(CASE)
    module = patches.modules[0]
    block = next(p for p in module.pieces if isinstance(p, Block))
    if omni_code is not None:
        block = replace(block, code=omni_code)
    target = with_members(upstream, PatchSet((module,)))
    copy = next(p for p in module.pieces if isinstance(p, Copy))
    past = ModuleFacts.build(module, target).history(copy)
    assert past is not None
    return older_code.older_code(block, past)


def test_the_older_run_is_upstream_s_and_the_rest_omni_s() -> None:
    found = _found()
    assert found is not None
    assert (found.had, found.changed_by) == ("older.py", "base.py")
    assert found.older == ("self.requests.pop(req_id, None)",)
    assert found.own == ("self.buffers.pop(req_id, None)",)
    assert found.code == (
        "state = self.requests.pop(req_id, None)\n"
        "self.on_state_removed(req_id, state)\n"
        "self.buffers.pop(req_id, None)\n"
    )


def test_omni_s_lines_stay_before_the_older_code_too() -> None:
    found = _found("self.buffers.pop(req_id, None)\nself.requests.pop(req_id, None)\n")
    assert found is not None
    assert found.code.splitlines()[0] == "self.buffers.pop(req_id, None)"
    assert found.code.splitlines()[1:] == [
        "state = self.requests.pop(req_id, None)",
        "self.on_state_removed(req_id, state)",
    ]


def test_older_code_held_twice_is_no_evidence() -> None:
    """Which of the two runs is upstream's would be a guess."""
    twice = "self.requests.pop(req_id, None)\nself.buffers.pop(req_id, None)\n" * 2
    assert _found(twice) is None


def test_an_edit_that_also_holds_the_base_s_code_is_no_evidence() -> None:
    """omni's "own" lines would be upstream's code: restating would run it twice."""
    both = "self.requests.pop(req_id, None)\nself.on_state_removed(req_id, None)\n"
    assert _found(both) is not None  # another call, omni's own
    same = "self.requests.pop(req_id, None)\nself.on_state_removed(req_id, state)\n"
    assert _found(same) is None


def test_the_older_code_alone_is_no_part_of_this_evidence() -> None:
    """An edit that is all older code is upstream history's plain lag (``explain``)."""
    assert _found("self.requests.pop(req_id, None)\n") is None
