"""The unread-lag rule on a member's decisions as other member rules may leave them.

The golden cases (tests/data/rules/unread-lag/) show what the rule decides; here, what it
does when the block that took a lag's readers out ends a conflict after the rule kept the
lag out: the readers are back in the output, so the lag follows upstream again.
"""

from __future__ import annotations

from dataclasses import replace

from omni_port.api.inputs import with_members
from omni_port.sync import decisions
from omni_port.sync.context import conflict_at
from omni_port.sync.facts import declared
from omni_port.sync.rules import unread_lag
from omni_port.sync.rules.unread_lag import RULE
from tests.golden import DATA
from tests.sync_cases import inputs

CASE = DATA / "rules" / "unread-lag" / "yes_a_binding_only_omni_s_replaced_code_read_stays_out"


def _member() -> decisions.Copied:
    patches, upstream, locations = inputs(CASE)
    (module,) = patches.modules
    decided = decisions.decide(
        module, with_members(upstream, patches), locations, declared=declared(patches)
    )
    (member,) = [m for m in decided.copies.values() if m.decisions]
    return member


def test_a_kept_out_lag_stays_out_while_its_readers_stay_out() -> None:
    member = _member()
    assert member.facts is not None
    edit, block = member.decisions
    assert not edit.follow and not block.conflict
    assert RULE.revise(member.facts, member.decisions) == list(member.decisions)


def test_a_kept_out_lag_follows_again_when_the_block_that_took_its_readers_out_is_a_conflict() -> (
    None
):
    member = _member()
    assert member.facts is not None
    edit, block = member.decisions
    assert block.block.id in edit.relies_on
    now = [edit, conflict_at(block, "a later rule made it one")]
    revised = RULE.revise(member.facts, now)
    assert revised is not None
    assert revised[0].follow and not revised[0].relies_on
    assert revised[0].reason.endswith(unread_lag._FOLLOWED)
    assert revised[1] is now[1]
    # Judged again on the member as it now stands, the followed lag is left as it is.
    again = RULE.revise(member.facts, [replace(revised[0]), now[1]])
    assert again is not None and again[0].follow
