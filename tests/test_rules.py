"""The evidence rules of the placement engine on golden cases: tests/data/rules/<rule>/<case>/.

Every case is a whole upgrade, as in test_splice, in the folder named after the rule's
``decided_by`` value (``upstream-history``, ``merge3``, ...): the
base the omni module was ported from, the omni module, the new upstream, and optionally
``order`` (labels of upstream history, oldest first: ``base.py``, ``upstream.py`` and
other ``.py`` files of the case) and ``catalog.md`` (Location lines, by block id: ``id:
location`` lines) and ``gpu.py`` (omni's GPU runner beside the omni module: the blocks'
counterparts); expected are the generated module (``expected.py``) and every block's
fate with the rules that decided it (``expected.txt``).

A case named ``yes_*`` is one the rule decides (its name is among the ``decided_by`` of
some block); ``no_*`` is one it must leave alone (no block is decided by it). Every rule
has both. The three-way statement merge below the engine has its own cases
(tests/test_merge3.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_port import api
from omni_port.api import SyncResult
from omni_port.model import PatchSet, Rule, Status
from omni_port.sources.textio import decode
from omni_port.sources.upstream import Release
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


def _run(folder: Path) -> tuple[PatchSet, SyncResult]:
    base = api.parse_upstream(_text(folder, "base.py"), "base.py")
    upstream = api.parse_upstream(_text(folder, "upstream.py"), "upstream.py", "fakeacc.runner_v1")
    if (folder / "order").exists():
        labels = _text(folder, "order").split()
        history = tuple(Release(label, _text(folder, label)) for label in labels)
        upstream = api.Upstream(
            upstream.label, upstream.sha256, upstream.tree, upstream.module, history=history
        )
    gpu = _text(folder, "gpu.py") if (folder / "gpu.py").exists() else None
    extraction = api.extract_text(_text(folder, "omni.py"), "omni.py", base, counterpart=gpu)
    patches = PatchSet((extraction.module,))
    locations = {}
    if (folder / "catalog.md").exists():
        rows = _text(folder, "catalog.md").splitlines()
        locations = dict(row.split(": ", 1) for row in rows if row.strip())
    synced = api.sync_patches(patches, upstream, tool=TOOL, locations=locations)
    return patches, synced.result


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
    decided = [p.block_id for p in result.placements if rule in p.decided_by]
    if name.startswith("yes_"):
        assert decided, f"no block decided by {rule.value}"
    else:
        assert name.startswith("no_") and not decided, f"decided by {rule.value}: {decided}"


@pytest.mark.parametrize("rule", sorted(p.name for p in RULES.iterdir() if p.is_dir()))
def test_rule_cases_show_both_sides(rule: str) -> None:
    """Every rule has a case it decides and a case it must leave alone."""
    names = _cases(rule)
    assert any(n.startswith("yes_") for n in names), rule
    assert any(n.startswith("no_") for n in names), rule
