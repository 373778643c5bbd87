"""Upstream history as evidence, read directly: which upstream change changed what a block
replaced (the change its notes name, docs/design.md rule 6). Runners written for these tests."""

from __future__ import annotations

from dataclasses import replace

from omni_port import api
from omni_port.api.inputs import with_members
from omni_port.model import Block, Copy, PatchSet, Release
from omni_port.sync.evidence import history, tied
from omni_port.sync.facts import ModuleFacts

BASE = """\
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        if self.uses_cache:
            self.log(tokens)
        output = self.run(tokens)
        return output
"""

#: The release after the base: it edits the statement omni's block replaces.
NEWER = BASE.replace("self.log(tokens)", "self.trace(tokens)")
TARGET = NEWER.replace("output = self.run(tokens)", "output = self.run(tokens, fast=True)")

OMNI = """\
from fakeacc.runner_v1 import NPUModelRunner


class R(NPUModelRunner):
    def forward(self, batch):
        tokens = self.prepare(batch)
        # ---------- Omni-new ----------
        if self.uses_cache:
            self.log_stages(tokens, batch.stages)
        # ---------- Omni-new ----------
        output = self.run(tokens)
        return output
"""


def _block_and_history() -> tuple[Block, history.MemberHistory]:
    base = api.parse_upstream(BASE, "base.py")
    target = api.parse_upstream(TARGET, "target.py", "fakeacc.runner_v1")
    releases = tuple(Release(n, t) for n, t in (("base.py", BASE), ("newer.py", NEWER)))
    target = replace(target, history=releases)
    module = api.extract_text(OMNI, "omni.py", base).module
    target = with_members(target, PatchSet((module,)))
    copy = next(p for p in module.pieces if isinstance(p, Copy))
    block = next(p for p in module.pieces if isinstance(p, Block))
    past = ModuleFacts.build(module, target).history(copy)
    assert past is not None
    return block, past


def test_the_change_to_what_a_block_replaced_is_the_first_release_without_it() -> None:
    block, past = _block_and_history()
    assert history.changed_by(block, past) == "newer.py"


def test_a_block_whose_neighbours_are_omni_s_own_still_names_the_change() -> None:
    """Beside an edit of omni's own, the block's recorded neighbour is the runner's
    statement, which no release holds: the place is not found as recorded, and the
    replaced statements are looked for as a run in the member instead."""
    block, past = _block_and_history()
    moved = replace(block.anchor, after=("output = self.run(tokens, omni=True)", "return output"))
    assert history.changed_by(replace(block, anchor=moved), past) == "newer.py"
    gone = replace(block.anchor, replaced=("self.never_upstream()",), after=moved.after)
    assert history.changed_by(replace(block, anchor=gone), past) == ""


#: A statement edited (``strict=True``), then moved into a ``with`` by a later release.
EDITED = BASE.replace("self.log(tokens)", "self.log(tokens, strict=True)")
WRAPPED = EDITED.replace(
    "        output = self.run(tokens)\n",
    "        with self.lock():\n            output = self.run(tokens)\n",
).replace(
    "        if self.uses_cache:\n            self.log(tokens, strict=True)\n",
    "        with self.lock():\n            if self.uses_cache:\n"
    "                self.log(tokens, strict=True)\n",
)


def _blocks() -> list[Block]:
    """The blocks omni's runner has against the base."""
    module = api.extract_text(OMNI, "omni.py", api.parse_upstream(BASE, "base.py")).module
    return [p for p in module.pieces if isinstance(p, Block)]


def _past(*order: tuple[str, str]) -> history.MemberHistory:
    """The member's history over ``order`` (label, text), the last the new upstream."""
    base = api.parse_upstream(order[0][1], order[0][0])
    target = api.parse_upstream(order[-1][1], order[-1][0], "fakeacc.runner_v1")
    target = replace(target, history=tuple(Release(n, t) for n, t in order))
    module = api.extract_text(OMNI, "omni.py", base).module
    target = with_members(target, PatchSet((module,)))
    copy = next(p for p in module.pieces if isinstance(p, Copy))
    past = ModuleFacts.build(module, target).history(copy)
    assert past is not None
    return past


def test_the_change_that_brought_a_statement_s_text_is_not_one_that_moved_it() -> None:
    """`self.log(tokens, strict=True)` came with edited.py (base.py's `self.log(tokens)` is
    another text, however alike) and wrapped.py only moved it into a `with`: the note names
    edited.py and says wrapped.py moved it."""
    head, path = "self.log(tokens, strict=True)", ("if self.uses_cache:",)
    past = _past(("base.py", BASE), ("edited.py", EDITED))
    (found,) = history.brought_here(past, [head], path, 0, past.target)
    assert found == history.Brought(head, "edited.py")
    past = _past(("base.py", BASE), ("edited.py", EDITED), ("wrapped.py", WRAPPED))
    (found,) = history.brought_here(past, [head], ("with self.lock():", *path), 0, past.target)
    assert found == history.Brought(head, "edited.py", "wrapped.py")
    words = history.which_brought([found], lambda label: label)
    assert words == f"`{head}`, which edited.py brought (wrapped.py moved it here)"


def test_a_change_that_only_wrapped_what_a_block_replaced_is_no_edit_of_it() -> None:
    """wrapped.py put the `if` omni's block replaced into a `with`, unchanged: the place
    changed there, the text in newer.py, which the notes name."""
    wrapped = BASE.replace(
        "        if self.uses_cache:\n            self.log(tokens)\n",
        "        with self.lock():\n            if self.uses_cache:\n"
        "                self.log(tokens)\n",
    )
    newer = wrapped.replace("self.log(tokens)", "self.trace(tokens)")
    past = _past(("base.py", BASE), ("wrapped.py", wrapped), ("newer.py", newer))
    block = next(b for b in _blocks() if b.marked)
    assert history.changed_by(block, past) == "wrapped.py"
    assert history.edited_by(block, past) == "newer.py"


def _at(omni: str, base: str, *order: tuple[str, str]) -> tuple[list[Block], history.MemberHistory]:
    """The blocks of ``omni`` extracted against the release ``base`` of ``order`` (label,
    text; the last the new upstream), and the member's history over ``order``."""
    texts = dict(order)
    target = api.parse_upstream(order[-1][1], order[-1][0], "fakeacc.runner_v1")
    target = replace(target, history=tuple(Release(n, t) for n, t in order))
    module = api.extract_text(omni, "omni.py", api.parse_upstream(texts[base], base)).module
    target = with_members(target, PatchSet((module,)))
    copy = next(p for p in module.pieces if isinstance(p, Copy))
    past = ModuleFacts.build(module, target).history(copy)
    assert past is not None
    return [p for p in module.pieces if isinstance(p, Block)], past


#: The release before ``BASE`` without the statement omni's block replaces.
LACKS = BASE.replace("        if self.uses_cache:\n            self.log(tokens)\n", "")


def test_what_a_block_replaced_arrived_with_its_own_text_not_with_a_neighbour() -> None:
    """`if self.uses_cache:` came with came.py, whose member lacked the statement before
    it (`tokens = ...`, which base.py brought): the statement arrived in came.py, not with
    its neighbour (main named base.py)."""
    came = BASE.replace("        tokens = self.prepare(batch)\n", "")
    order = (("old.py", LACKS), ("came.py", came), ("base.py", BASE), ("new.py", TARGET))
    (block,), past = _at(OMNI, "base.py", *order)
    assert history.arrived_in(block, past) == "came.py"


def test_a_compound_statement_arrived_with_its_header_not_with_a_change_of_its_body() -> None:
    """came.py brought `if self.uses_cache:` with another body, base.py changed the body:
    the statement arrived in came.py (main dated it by its whole text: base.py)."""
    came = BASE.replace("self.log(tokens)", "self.trace(tokens)")
    order = (("old.py", LACKS), ("came.py", came), ("base.py", BASE), ("new.py", TARGET))
    (block,), past = _at(OMNI, "base.py", *order)
    assert history.arrived_in(block, past) == "came.py"
    assert history.arrived_in(block, _past(("base.py", BASE), ("new.py", TARGET))) == ""


def test_a_walk_through_a_change_of_a_replaced_body_moves_nothing_around_the_block() -> None:
    """newer.py changed only the body of the `if` omni's block replaced: the walk reaches
    the new upstream without a step that moved the statements around the block (main
    listed newer.py as one)."""
    (block,) = _blocks()
    past = _past(("base.py", BASE), ("newer.py", NEWER), ("new.py", TARGET))
    walked = history.walked(block, past)
    assert walked is not None
    assert walked.via == ()
    moved = TARGET.replace("        tokens = self.prepare(batch)\n", "")
    walked = history.walked(block, _past(("base.py", BASE), ("newer.py", NEWER), ("m.py", moved)))
    assert walked is None or walked.via == ()


#: The runner's unmarked `if` with an `else`, older upstream code whose body base.py changed.
PLAIN_IF = "        if self.uses_cache:\n            self.log(tokens)\n"
WITH_ELSE = PLAIN_IF + "        else:\n            self.skip()\n"


def test_a_lag_in_a_compound_statement_s_body_says_what_changed_there() -> None:
    """The runners hold old.py's `if` with its `else`, which base.py took out: the note
    quotes what changed in the body, not "`if self.uses_cache:` ... changed into
    `if self.uses_cache:`" (main)."""
    omni = OMNI.replace("        # ---------- Omni-new ----------\n", "")
    omni = omni.replace("self.log_stages(tokens, batch.stages)", "self.log(tokens)")
    omni = omni.replace(PLAIN_IF, WITH_ELSE)
    base = BASE.replace("self.log(tokens)", "self.trace(tokens)")
    order = (("old.py", BASE.replace(PLAIN_IF, WITH_ELSE)), ("base.py", base), ("new.py", base))
    (block,), past = _at(omni, "base.py", *order)
    found = history.explain(block, past)
    assert found is not None and found.lag
    assert "changed into `if self.uses_cache:`" not in found.reason
    said = "base.py changed in its body: `self.log(tokens); self.skip()` into `self.trace(tokens)`"
    assert said in found.reason


def test_a_statement_edited_at_its_place_names_the_change_that_brought_it_and_the_edit() -> None:
    """base.py brought `self.log(tokens)`, edited.py gave it `strict=True`: the note names
    base.py, which `git log -S 'self.log('` finds, and edited.py as the edit (main named
    edited.py alone, as if the statement was not there before it)."""
    head, path = "self.log(tokens, strict=True)", ("if self.uses_cache:",)
    past = _past(("old.py", LACKS), ("base.py", BASE), ("edited.py", EDITED), ("new.py", EDITED))
    (found,) = history.brought_here(past, [head], path, 0, past.target)
    assert found == history.Brought(head, "base.py", "", "edited.py")
    words = history.which_brought([found], lambda label: label)
    assert words == f"`{head}`, which base.py brought (edited.py changed it into this text)"
    # Another statement alike that edited.py still holds there is no edit of it.
    both = EDITED.replace(
        "self.log(tokens, strict=True)",
        "self.log(tokens, strict=True)\n            self.log(tokens)",
    )
    past = _past(("old.py", LACKS), ("base.py", BASE), ("both.py", both), ("new.py", both))
    (found,) = history.brought_here(past, [head], path, 0, past.target)
    assert found == history.Brought(head, "both.py")


def test_a_statement_the_oldest_release_read_has_is_older_than_history() -> None:
    """base.py, the oldest version read, has `tokens = ...` already: nothing read brought
    it, and the note says so (main said base.py brought it)."""
    head = "tokens = self.prepare(batch)"
    past = _past(("base.py", BASE), ("new.py", TARGET))
    (found,) = history.brought_here(past, [head], (), 0, past.target)
    assert found == history.Brought(head, "")
    words = history.which_brought([found], lambda label: label, "base.py")
    assert words == f"`{head}`, which base.py already had (older than the history read)"


def test_the_names_a_release_brings_are_its_scope_s_and_not_when_it_brought_the_member() -> None:
    """newer.py brings a local and a function into the method, and starts reading instance
    state and a builtin: only the first two can tie its hunks (``evidence.tied``). A
    release that brought the whole member brings nothing new to it: every name would be."""
    newer = BASE.replace(
        "output = self.run(tokens)",
        "group = get_group()\n        output = self.run(tokens, group, len(batch), self.limits)",
    )
    past = _past(("base.py", BASE), ("newer.py", newer))
    assert tied.brought_names(past, "newer.py") == {"group", "get_group"}
    assert tied.brought_names(past, "base.py") == frozenset()
    gone = BASE.replace("def forward(self, batch):", "def other(self, batch):")
    past = _past(("base.py", BASE), ("gone.py", gone), ("newer.py", newer))
    assert tied.brought_names(past, "newer.py") == frozenset()
