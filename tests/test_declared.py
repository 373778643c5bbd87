"""A marked block declares omni's ownership of the upstream statements it replaces, for every
runner: an unmarked edit of the very same statements in another runner's copy of the method
is omni's too, so where upstream edited them the intent rule keeps omni's code (with the
review note) instead of leaving a conflict. Runners written for these tests."""

from __future__ import annotations

from dataclasses import replace

from omni_port import api
from omni_port.model import PatchSet, Placement, Release, Rule, Status

BASE = """\
from fakeacc.runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        if self.uses_embeds or self.prompt_embeds:
            ids = None
        else:
            ids = self.ids(y)
        out = self.build(ids)
        self.record(out)
        return out
"""

#: Upstream edits the test of the `if` both runners replace.
TARGET = BASE.replace("if self.uses_embeds or", "if self.uses_embeds and not self.raw_tokens or")

#: One runner marks its version of the `if` ...
MARKED = """\
from fakeacc.runner_v1 import NPUModelRunner


class ARRunner(NPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        # ---------- Omni-new ----------
        if self.uses_embeds:
            ids = self.embed_ids(y)
        elif self.prompt_embeds:
            ids = None
        elif self.has_preprocess:
            ids = self.ids(y, stage=True)
        else:
            ids = self.ids(y)
        # ---------- Omni-new ----------
        out = self.build(ids)
        self.record(out)
        return out
"""

#: ... the other holds its own version of it outside markers.
UNMARKED = """\
from fakeacc.runner_v1 import NPUModelRunner


class GenerationRunner(NPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        if self.uses_embeds:
            ids = self.embed_ids(y)
        elif self.prompt_embeds:
            ids = None
        else:
            ids = self.ids(y)
        out = self.build(ids)
        self.record(out)
        return out
"""


def _fates(*runners: tuple[str, str]) -> dict[str, Placement]:
    base = api.parse_upstream(BASE, "base.py")
    target = api.parse_upstream(TARGET, "target.py", "fakeacc.runner_v1")
    history = (Release("base.py", BASE), Release("target.py", TARGET))
    target = replace(target, history=history)
    options = api.ExtractOptions(implicit=True)
    modules = tuple(api.extract_text(text, name, base, options).module for name, text in runners)
    result = api.sync_patches(PatchSet(modules), target, tool="t").result
    return {p.block_id.split(".", 1)[1]: p for p in result.placements}


def test_an_unmarked_edit_of_what_a_marked_block_replaces_elsewhere_is_omni_s() -> None:
    fates = _fates(("ar.py", MARKED), ("generation.py", UNMARKED))
    marked, unmarked = fates["ARRunner.step.block-01"], fates["GenerationRunner.step.edit-01"]
    assert marked.status is Status.PLACED and Rule.INTENT in marked.decided_by
    assert unmarked.status is Status.PLACED and Rule.INTENT in unmarked.decided_by
    assert "omni's marked ar.ARRunner.step.block-01 replaces them too" in unmarked.reason


def test_without_the_marked_runner_the_unmarked_edit_stays_a_conflict() -> None:
    """Nothing declares the edit omni's: both sides changed the `if`, a conflict."""
    fates = _fates(("generation.py", UNMARKED))
    assert fates["GenerationRunner.step.edit-01"].status is Status.CONFLICT
