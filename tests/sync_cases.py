"""The harness of the golden sync cases: tests/data/splice/<case>/ and
tests/data/rules/<rule>/<case>/, one format and one way to run them.

A case is a whole upgrade: the upstream base the omni module was ported from
(``base.py``), the omni module (``omni.py``), the new upstream (``upstream.py``), other
releases of upstream history (any other ``.py``), optionally omni's GPU runner beside the
omni module (``gpu.py``: the blocks' counterparts), and ``flags``: ``key = value`` lines
(black's ``# flags:`` header, as a file of the folder), a key that names a list repeated
once per item:

- ``extract-class``: the upstream class the omni module's copies come from (default
  ``NPUModelRunner``); ``sync-class``: the new upstream's runner class, when it differs;
- ``order``: labels of upstream history, oldest first (``base.py``, ``upstream.py`` and
  other ``.py`` files of the case);
- ``commit``: ``LABEL what the commit says``: that label of history is a commit of a
  clone, one upstream change, not a release;
- ``location``: ``BLOCK: text``: the catalog's Location line of a block;
- ``resolve``: ``BLOCK #K [FILE]``: a maintainer's recorded choice, the candidate as a
  sync onto FILE (by default ``upstream.py``) numbers it; ``BLOCK drop``: the block
  dropped as obsolete (``resolve --drop``);
- ``with``: the other rules (by ``decided_by`` value) whose answers a rule case's rule
  needs on the way when it runs alone (the statement merge after a header edit's place is
  found, the rule whose placement a member rule revises).

Expected are the generated module (``expected.py``) and every block's fate, one line each,
then the findings (``expected.txt``); a rule case named ``failing_*`` records a known gap
(``ideal.py``/``ideal.txt``: the right output, see tests/test_rules.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from omni_port import api
from omni_port.api import resolution
from omni_port.api.inputs import with_members
from omni_port.api.run import Given
from omni_port.model import PatchSet, Release, Resolution, Status, code_digest
from omni_port.patches import edits
from omni_port.patches.patchfile import render_patch_set
from omni_port.sync import pipeline
from omni_port.sync.pipeline import SyncResult
from omni_port.sync.rule import PlacementRule
from tests.golden import DATA, cases

#: The generator named in golden headers: they stay the same across releases.
TOOL = "omni-port test"
#: The keys a ``flags`` file may hold once, and those it repeats (one item a line).
SINGLE = frozenset({"extract-class", "sync-class", "order", "with"})
REPEATED = frozenset({"commit", "location", "resolve"})


def rule_cases(rule: str) -> list[str]:
    """The case folders of one rule, sorted."""
    return sorted(p.name for p in (DATA / "rules" / rule).iterdir() if p.is_dir())


def rule_folders() -> list[str]:
    """The rules with a folder of cases, sorted."""
    return sorted(p.name for p in (DATA / "rules").iterdir() if p.is_dir())


def all_cases() -> list[str]:
    """Every golden sync case, by its folder under tests/data (``splice/x``,
    ``rules/anchor/yes_x``): the test ids."""
    return [
        *(f"splice/{case}" for case in cases("splice")),
        *(f"rules/{rule}/{case}" for rule in rule_folders() for case in rule_cases(rule)),
    ]


def _text(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def flags(folder: Path) -> dict[str, list[str]]:
    """The case's ``flags``, by key (none when the file is absent); an unknown key, or a
    single one given twice, is an error of the case."""
    found: dict[str, list[str]] = {}
    path = folder / "flags"
    rows = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for row in rows:
        if not row.strip():
            continue
        key, _, value = (part.strip() for part in row.partition("="))
        assert key in SINGLE | REPEATED, f"{path}: unknown flag {key!r}"
        assert key in REPEATED or key not in found, f"{path}: {key} given twice"
        found.setdefault(key, []).append(value)
    return found


def flag(folder: Path, key: str, default: str = "") -> str:
    """A single flag's value (``default`` when absent)."""
    return flags(folder).get(key, [default])[0]


def inputs(folder: Path) -> tuple[PatchSet, api.Upstream, dict[str, str]]:
    """The case's patches (its ``resolve`` choices recorded), its upstream (with the
    history ``order`` names) and its catalog's Location lines by block id."""
    given = flags(folder)
    base = api.parse_upstream(_text(folder, "base.py"), "base.py")
    upstream = api.parse_upstream(
        _text(folder, "upstream.py"), "upstream.py", "fakeacc.runner_v1", flag(folder, "sync-class")
    )
    if "order" in given:
        said = dict(row.split(" ", 1) for row in given.get("commit", []))
        history = tuple(
            Release(label, _text(folder, label), change=said.get(label, ""))
            for label in given["order"][0].split()
        )
        upstream = replace(upstream, history=history)
    gpu = _text(folder, "gpu.py") if (folder / "gpu.py").exists() else None
    options = api.ExtractOptions(upstream_class=flag(folder, "extract-class", "NPUModelRunner"))
    extraction = api.extract_text(
        _text(folder, "omni.py"), "omni.py", base, options, counterpart=gpu
    )
    patches = _resolved(folder, given.get("resolve", []), PatchSet((extraction.module,)))
    locations = dict(row.split(": ", 1) for row in given.get("location", []))
    return patches, upstream, locations


def run(folder: Path, alone: Sequence[PlacementRule] | None = None) -> tuple[PatchSet, SyncResult]:
    """The case's sync with every rule, or with the rules ``alone`` (and no offers step:
    the engine's answer as it ranked it)."""
    patches, upstream, locations = inputs(folder)
    if alone is None:
        given = Given(locations=locations)
        return patches, api.sync_patches(patches, upstream, given=given, tool=TOOL).result
    options = pipeline.Options(TOOL, TOOL, locations=locations, rules=tuple(alone))
    files = render_patch_set(patches, TOOL)
    return patches, pipeline.sync(patches, files, with_members(upstream, patches), options)


def _resolved(folder: Path, rows: list[str], patches: PatchSet) -> PatchSet:
    """The patches with the choices ``resolve`` records: ``BLOCK #K [FILE]``, the candidate
    as a sync onto FILE (default ``upstream.py``) numbers it."""
    for row in rows:
        block_id, choice, *on = row.split()
        if choice == "drop":
            block = edits.find_block(patches, block_id)[1]
            dropped = Resolution("", (), (), "", code_digest(block.code), "", "obsolete")
            patches = edits.resolve(patches, block_id, dropped)
            continue
        name = on[0] if on else "upstream.py"
        upstream = api.parse_upstream(_text(folder, name), name, "fakeacc.runner_v1")
        module, block = edits.find_block(patches, block_id)
        member = resolution.member_of(module, block, upstream)
        placed = resolution.decided_on(upstream, patches, module.name)[block_id]
        slot = resolution.slot_of(member, placed.candidates[int(choice[1:]) - 1])
        assert slot is not None, f"{block_id}: no place at candidate {choice}"
        patches = edits.resolve(patches, block_id, resolution.resolution_at(slot))
    return patches


def fates(result: SyncResult) -> str:
    """Every block's fate (kind, status, confidence, the rules that decided it, the release
    behind it, its output lines, why), one line each, then the findings."""
    lines = []
    for p in result.placements:
        where = f"lines {p.start}-{p.end}" if p.status is not Status.CONFLICT else "conflict"
        rules = f" [{', '.join(r.value for r in p.decided_by)}]" if p.decided_by else ""
        release = f" <{p.release}>" if p.release else ""
        reason = f" ({p.reason})" if p.reason else ""
        lines.append(
            f"{p.block_id} {p.kind} {p.status.value} {p.confidence:.2f}{rules}{release} "
            f"{where}{reason}"
        )
    lines += [f"{f.code.value} {f.message}" for f in result.findings]
    return "".join(line + "\n" for line in lines)
