"""The evidence rules of the placement engine on golden cases: tests/data/rules/<rule>/<case>/.

Every case is a whole upgrade, as in test_splice, in the folder named after the rule's
``decided_by`` value (``upstream-history``, ``merge3``, ...): the
base the omni module was ported from, the omni module, the new upstream, and optionally
``order`` (labels of upstream history, oldest first: ``base.py``, ``upstream.py`` and
other ``.py`` files of the case) and ``commits`` (``LABEL what the commit says`` lines:
those labels of history are commits of a clone, one upstream change each, not releases)
and ``catalog.md`` (Location lines, by block id: ``id:
location`` lines) and ``gpu.py`` (omni's GPU runner beside the omni module: the blocks'
counterparts) and ``resolve`` (a maintainer's recorded choices: ``BLOCK #K [FILE]`` lines,
the candidate as a sync onto FILE, by default ``upstream.py``, numbers it) and ``with``
(the other rules whose answers the case's rule needs on the way, by ``decided_by`` value:
the statement merge after a header edit's place is found, the rule whose placement a
member rule revises); expected are
the generated module (``expected.py``) and every block's fate with the rules that
decided it (``expected.txt``).

A case named ``yes_*`` is one the rule decides (the engine stamps its name into the
``decided_by`` of some block; for a member or module rule, ``rules.MEMBER_RULES`` and
``rules.MODULE_RULES``, also a conflict
it made of a decided block, which the engine names it in and no report shows), both with
every rule and with the rule alone (the engine's own steps, the rules ``with`` names, and
no other: a case must not pass on another rule's answer); ``no_*`` is one it must leave
alone (no block is decided by it, with every rule or alone). Every rule has both, and so
do the engine's own steps that stamp a name no rule has (``stepwise``: its cases run alone
with no rule at all). A ``failing_*`` case
records a known gap: ``expected.*`` hold today's output and ``ideal.py``/``ideal.txt``
the right one, which the test requires to differ (when a change makes them equal, the
case becomes a ``yes_``/``no_`` one). The three-way statement merge
below the engine has its own cases (tests/test_merge3.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from omni_port import api
from omni_port.api import resolution
from omni_port.api.inputs import with_members
from omni_port.api.run import Given
from omni_port.model import PatchSet, Release, Rule, Status
from omni_port.patches import edits
from omni_port.patches.patchfile import render_patch_set
from omni_port.sources.textio import decode
from omni_port.sync import pipeline, splice
from omni_port.sync.facts import declared
from omni_port.sync.pipeline import SyncResult
from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import MEMBER_RULES, MODULE_RULES
from omni_port.sync.rules import RULES as ENGINE
from tests.golden import DATA, check_file

RULES = DATA / "rules"
TOOL = "omni-port test"


def _cases(rule: str) -> list[str]:
    return sorted(p.name for p in (RULES / rule).iterdir() if p.is_dir())


def _engine_cases() -> list[str]:
    return [
        f"{rule.name}/{case}"
        for rule in sorted(RULES.iterdir())
        if rule.is_dir()
        for case in _cases(rule.name)
    ]


def _text(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def _words(folder: Path, name: str) -> list[str]:
    """The words of an optional flags file of a case (none when it is absent)."""
    return _text(folder, name).split() if (folder / name).exists() else []


def _rows(folder: Path, name: str) -> list[str]:
    """The lines of an optional file of a case that are not blank (none when it is absent)."""
    found = _text(folder, name).splitlines() if (folder / name).exists() else []
    return [row for row in found if row.strip()]


#: The names the engine's own steps stamp that no rule has (run with no rule at all).
STEPS = {Rule.STEPWISE.value}


def inputs_of(folder: Path) -> tuple[PatchSet, api.Upstream, dict[str, str]]:
    """The case's patches (its ``resolve`` choices recorded), its upstream (with the
    history ``order`` names) and its catalog's Location lines by block id."""
    base = api.parse_upstream(_text(folder, "base.py"), "base.py")
    upstream = api.parse_upstream(_text(folder, "upstream.py"), "upstream.py", "fakeacc.runner_v1")
    if (folder / "order").exists():
        labels = _text(folder, "order").split()
        said = dict(row.split(" ", 1) for row in _rows(folder, "commits"))
        history = tuple(
            Release(label, _text(folder, label), change=said.get(label, "")) for label in labels
        )
        upstream = api.Upstream(
            upstream.label, upstream.sha256, upstream.tree, upstream.module, history=history
        )
    gpu = _text(folder, "gpu.py") if (folder / "gpu.py").exists() else None
    extraction = api.extract_text(_text(folder, "omni.py"), "omni.py", base, counterpart=gpu)
    patches = _resolved(folder, PatchSet((extraction.module,)))
    locations = {}
    if (folder / "catalog.md").exists():
        rows = _text(folder, "catalog.md").splitlines()
        locations = dict(row.split(": ", 1) for row in rows if row.strip())
    return patches, upstream, locations


def _run(folder: Path, alone: Sequence[PlacementRule] | None = None) -> tuple[PatchSet, SyncResult]:
    """The case's sync with every rule, or with the rules ``alone``."""
    patches, upstream, locations = inputs_of(folder)
    if alone is None:
        given = Given(locations=locations)
        return patches, api.sync_patches(patches, upstream, given=given, tool=TOOL).result
    options = pipeline.Options(TOOL, TOOL, locations=locations, rules=tuple(alone))
    files = render_patch_set(patches, TOOL)
    return patches, pipeline.sync(patches, files, with_members(upstream, patches), options)


def _decided_by(
    folder: Path, rule: Rule, result: SyncResult, rules: Sequence[PlacementRule]
) -> list[str]:
    """The blocks ``rule`` decided in the case's sync ``result`` with ``rules``: those whose
    ``decided_by`` names it, and for a member rule the conflicts it made (the engine names
    the rule in the rules of such a conflict; no report shows a conflict's)."""
    decided = [p.block_id for p in result.placements if rule in p.decided_by]
    if rule not in {r.name for r in (*MEMBER_RULES, *MODULE_RULES)}:
        return decided
    patches, upstream, locations = inputs_of(folder)
    upstream = with_members(upstream, patches)
    owned = declared(patches)
    made = [
        d.block.id
        for module in patches.modules
        for copied in splice.decide(module, upstream, locations, rules, owned).copies.values()
        for d in copied.decisions
        if d.conflict and rule in d.rules
    ]
    return decided + made


def _resolved(folder: Path, patches: PatchSet) -> PatchSet:
    """The patches with the choices ``resolve`` records: lines ``BLOCK #K [FILE]``, the
    candidate as a sync onto FILE (default ``upstream.py``) numbers it."""
    if not (folder / "resolve").exists():
        return patches
    for line in _text(folder, "resolve").splitlines():
        block_id, choice, *on = line.split()
        name = on[0] if on else "upstream.py"
        upstream = api.parse_upstream(_text(folder, name), name, "fakeacc.runner_v1")
        module, block = edits.find_block(patches, block_id)
        member = resolution.member_of(module, block, upstream)
        placed = resolution.decided_on(upstream, patches, module.name)[block_id]
        slot = resolution.slot_of(member, placed.candidates[int(choice[1:]) - 1])
        assert slot is not None, f"{block_id}: no place at candidate {choice}"
        patches = edits.resolve(patches, block_id, resolution.resolution_at(slot))
    return patches


def _fates(result: SyncResult) -> str:
    lines = []
    for p in result.placements:
        where = f"lines {p.start}-{p.end}" if p.status is not Status.CONFLICT else "conflict"
        rules = f" [{', '.join(r.value for r in p.decided_by)}]" if p.decided_by else ""
        release = f" <{p.release}>" if p.release else ""
        reason = f" ({p.reason})" if p.reason else ""
        lines.append(f"{p.block_id} {p.status.value}{rules}{release} {where}{reason}")
    lines += [f"{f.code.value} {f.message}" for f in result.findings]
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("case", _engine_cases())
def test_rule_case(case: str) -> None:
    folder = RULES / case
    _, result = _run(folder)
    text = decode(result.files["omni.py"], "omni.py").text
    compile(text, "omni.py", "exec")
    check_file(folder / "expected.py", text)
    check_file(folder / "expected.txt", _fates(result))
    assert _run(folder)[1].files == result.files, "a second sync must be byte-identical"
    directory, name = case.split("/")
    rule = Rule(directory)
    decided = _decided_by(folder, rule, result, ENGINE)
    needed = {rule, *(Rule(n) for n in _words(folder, "with"))}
    rules = [r for r in ENGINE if r.name in needed]
    by_itself = _decided_by(folder, rule, _run(folder, rules)[1], rules)
    if name.startswith("failing_"):
        # A known gap: expected.* hold today's output, ideal.* the right one.
        assert (_text(folder, "ideal.py"), _text(folder, "ideal.txt")) != (
            text,
            _fates(result),
        ), f"{case} gives the ideal output now: make it a yes_ or no_ case"
    elif name.startswith("yes_"):
        assert decided, f"no block decided by {rule.value}"
        assert by_itself, f"no block decided by {rule.value} alone"
    else:
        assert name.startswith("no_") and not decided, f"decided by {rule.value}: {decided}"
        assert not by_itself, f"decided by {rule.value} alone: {by_itself}"


def test_every_rule_has_its_folder_of_cases() -> None:
    """One folder per placement rule (and per name only an engine step stamps), named after
    its ``decided_by`` value, and no other."""
    names = {r.name.value for r in ENGINE} | STEPS
    assert {p.name for p in RULES.iterdir() if p.is_dir()} == names


@pytest.mark.parametrize("rule", sorted(p.name for p in RULES.iterdir() if p.is_dir()))
def test_rule_cases_show_both_sides(rule: str) -> None:
    """Every rule has a case it decides and a case it must leave alone; a known gap is a
    ``failing_*`` case (today's output and the ideal one)."""
    names = _cases(rule)
    assert any(n.startswith("yes_") for n in names), rule
    assert any(n.startswith("no_") for n in names), rule
    assert all(n.startswith(("yes_", "no_", "failing_")) for n in names), rule


@pytest.mark.parametrize("case", _engine_cases())
def test_every_note_of_a_case_is_a_line_of_the_output(case: str) -> None:
    """A note about a block names a line of the generated module an editor can open, also
    for an edit that follows upstream's deletion and so has no lines of its own (it named
    the upstream module's line, which a summary then printed as the output's)."""
    _, result = _run(RULES / case)
    lines = decode(result.files["omni.py"], "omni.py").text.count("\n")
    for finding in result.findings:
        assert finding.path == "omni.py", f"{finding.code.value} names {finding.path}"
        assert 1 <= finding.line <= lines, f"{finding.code.value} at line {finding.line}"
