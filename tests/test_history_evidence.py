"""Upstream history as evidence, read directly: which upstream change changed what a block
replaced (the change its notes name, docs/design.md rule 6). Runners written for these tests."""

from __future__ import annotations

from dataclasses import replace

from omni_port import api
from omni_port.api.inputs import with_members
from omni_port.model import Block, Copy, PatchSet, Release
from omni_port.sync.evidence import history
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
