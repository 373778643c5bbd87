"""A marked block declares omni's ownership of the upstream statements it replaces, for every
runner: an unmarked edit of the very same statements in another runner's copy of the method
is omni's too, so where upstream edited them the intent rule keeps omni's code (with the
review note) instead of leaving a conflict. And code a runner holds unmarked that another
runner marks is omni's code: it dates nothing of the runner's lineage (docs/design.md rule
4), so what upstream brought before it is still upstream code the runners never had.
Runners written for these tests."""

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


# --- code another runner marks dates nothing --------------------------------------------------

#: Upstream history, one commit each: the runners' text around the hooks dates from
#: ``mark`` (#2), ``group`` came after it (#3), the hooks after that (#4).
COMMITS = (
    ("c1.py", "class NPUModelRunner:\n    def step(self, x):\n        y = self.prepare(x)\n"),
    ("c2.py", "        self.mark(y)\n"),
    (
        "c3.py",
        "        group = self.group()\n"
        "        if group.size > 1:\n"
        "            y = group.split(y)\n",
    ),
    (
        "c4.py",
        "        if self.hooks:\n"
        "            assert y is not None\n"
        "            self.hooks.before(y)\n",
    ),
)
TAIL = "        return self.run(y)\n"


def _text(upto: int) -> str:
    return "".join(text for _, text in COMMITS[:upto]) + TAIL


#: Upstream edits the group's test: both sides changed what the runners delete.
NEWER = _text(4).replace("if group.size > 1:", "if group.size > 1 and not group.last:")

HOOKS = """\
        if self.hooks:
            if y is not None:
                self.hooks.before(y)
"""

#: One runner marks the hooks it picked from #4 into text without the group ...
PICKED = f"""\
from fakeacc.runner_v1 import NPUModelRunner


class ARRunner(NPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        self.mark(y)
        # ---------- Omni-new ----------
{HOOKS}        # ---------- Omni-new ----------
        return self.run(y)
"""

#: ... the other holds the same code unmarked.
HELD = f"""\
from fakeacc.runner_v1 import NPUModelRunner


class GenerationRunner(NPUModelRunner):
    def step(self, x):
        y = self.prepare(x)
        self.mark(y)
{HOOKS}        return self.run(y)
"""


def _picked_fates(*runners: tuple[str, str]) -> tuple[dict[str, Placement], str]:
    base = api.parse_upstream(_text(4), "c4.py")
    target = api.parse_upstream(NEWER, "target.py", "fakeacc.runner_v1")
    history = tuple(
        Release(label, _text(n), change=f"{n:07x} step: change {n} (#{n})")
        for n, (label, _) in enumerate(COMMITS, 1)
    )
    target = replace(target, history=(*history, Release("target.py", NEWER, change="abcdef0 (#9)")))
    options = api.ExtractOptions(implicit=True)
    modules = tuple(api.extract_text(text, name, base, options).module for name, text in runners)
    result = api.sync_patches(PatchSet(modules), target, tool="t").result
    fates = {p.block_id.split(".", 1)[1]: p for p in result.placements}
    return fates, result.files["generation.py"].decode()


def test_code_another_runner_marks_dates_nothing_of_the_runner_s_text() -> None:
    """The hooks are omni's pick (the other runner marks them): around them the runners'
    text dates from #2, so the group (#3) is upstream code they never had, in both."""
    fates, text = _picked_fates(("ar.py", PICKED), ("generation.py", HELD))
    deletion = fates["GenerationRunner.step.edit-01"]
    assert deletion.status is Status.FOLLOWED and deletion.release == "c2.py"
    assert "upstream code the runners never had here stays: `group = self.group()" in (
        deletion.reason
    )
    assert "if group.size > 1 and not group.last:" in text
    assert "never had here stays: `group" in fates["ARRunner.step.block-01"].reason


def test_held_alone_the_code_dates_the_runner_s_text() -> None:
    """Nothing marks the hooks: the runner holds #4's code, so it had the group (#3)
    there and deleted it; upstream edited it, and omni's deletion wins (intent)."""
    fates, text = _picked_fates(("generation.py", HELD))
    deletion = fates["GenerationRunner.step.edit-01"]
    assert deletion.status is Status.PLACED and Rule.INTENT in deletion.decided_by
    assert "group" not in text
