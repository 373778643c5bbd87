"""Every offered choice works (issue 43, items 3 and 4): a conflict lists only candidates
that `resolve` takes and after which `verify` finds no new problem, and says why of the
others; `resolve --at LINE` replaces only what the block replaced in its base, or exactly
`--replacing N` statements; `verify` reports a resolution that deletes upstream code.

The runners are written for these tests (tests/data/choices/<case>/: the base omni ported
from, the omni runner, the new upstream, and optionally the ``order`` flag, upstream history:
the one format of tests/sync_cases.py), and the property runs over the rules' golden cases
too (tests/data/rules/<rule>/<case>/).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from omni_port import api
from omni_port.api import resolution
from omni_port.api.run import Given
from omni_port.model import Candidate, Code, PatchSet, Placement, Rule, Severity, Status
from omni_port.patches import edits
from omni_port.sync.pipeline import SyncResult
from omni_port.verify import checks
from tests.conftest import Cli
from tests.golden import DATA
from tests.sync_cases import inputs

CHOICES = DATA / "choices"
TOOL = "omni-port test"
CASES = sorted(
    [p for p in CHOICES.iterdir() if p.is_dir()]
    + [case for rule in (DATA / "rules").iterdir() if rule.is_dir() for case in rule.iterdir()]
)

#: Line numbers a message names: they move when a block goes in, the problem does not.
_LINES = re.compile(r"\blines? \d+(?:, \d+)*")


def _problems(
    patches: PatchSet, result: SyncResult, upstream: api.Upstream, omni: str
) -> Counter[str]:
    """What `verify` reports of ``result`` as errors, by code and message (lines left
    out), the old runner given so that a call run twice is seen (OP512)."""
    context = checks.Context(
        upstream=upstream, sources=checks.PackageSources({"omni": omni}, frozenset())
    )
    found = api.run.verify_files(result.files, result.placements, patches, context)
    return Counter(
        f"{f.code.value} {_LINES.sub('lines', f.message)}"
        for f in found
        if f.severity is Severity.ERROR and f.code is not Code.OP310
    )


def _synced(patches: PatchSet, upstream: api.Upstream, locations: dict[str, str]) -> SyncResult:
    given = Given(locations=locations)
    return api.sync_patches(patches, upstream, given=given, tool=TOOL).result


def _taking(
    patches: PatchSet, upstream: api.Upstream, placed: Placement, candidate: Candidate
) -> PatchSet:
    """The patches as `resolve BLOCK --at '#K'` records ``candidate``."""
    module, block = edits.find_block(patches, placed.block_id)
    member = resolution.member_of(module, block, upstream)
    slot = resolution.slot_of(member, candidate)
    assert slot is not None, f"{placed.block_id}: no place at line {candidate.line}"
    return edits.resolve(patches, block.id, resolution.resolution_at(slot))


def _open(result: SyncResult) -> list[Placement]:
    return [p for p in result.placements if p.status is Status.CONFLICT and p.candidates]


def test_every_offered_candidate_resolves_and_verifies_clean() -> None:
    """For every candidate of every conflict of every case: recorded as `resolve` records
    it, the next sync places the block there by its resolution, turns no placed block into
    a conflict, and verify reports nothing it did not report before (no call run twice,
    no name unbound, no upstream code deleted). Floors: enough candidates are offered, and
    enough conflicts withhold some, that neither an engine offering nothing nor a filter
    passing everything could pass."""
    offered = withholding = 0
    for folder in CASES:
        patches, upstream, locations = inputs(folder)
        result = _synced(patches, upstream, locations)
        withholding += sum(1 for p in result.placements if _withholds(p))
        case = _Case(folder, patches, upstream, locations, result)
        for placed in _open(result):
            for rank, candidate in enumerate(placed.candidates, start=1):
                offered += 1
                case.check(placed, rank, candidate)
    assert offered >= 20, offered
    assert withholding >= 15, withholding


def _withholds(placed: Placement) -> bool:
    return "not offered: " in placed.reason or "no candidate works: " in placed.reason


@dataclass(frozen=True)
class _Case:
    """One case synced, its candidates to try."""

    folder: Path
    patches: PatchSet
    upstream: api.Upstream
    locations: dict[str, str]
    result: SyncResult

    def check(self, placed: Placement, rank: int, candidate: Candidate) -> None:
        """The candidate resolves and verifies clean (the property's one step)."""
        where = f"{self.folder.parent.name}/{self.folder.name}: {placed.block_id} #{rank}"
        taken = _taking(self.patches, self.upstream, placed, candidate)
        after = _synced(taken, self.upstream, self.locations)
        rows = {p.block_id: p for p in after.placements}
        mine = rows[placed.block_id]
        assert mine.status is Status.PLACED, f"{where}: {mine.reason}"
        assert Rule.RESOLVED in mine.decided_by, where
        lost = [
            p.block_id
            for p in self.result.placements
            if p.status is not Status.CONFLICT and rows[p.block_id].status is Status.CONFLICT
        ]
        assert not lost, f"{where}: makes {lost} conflicts"
        omni = (self.folder / "omni.py").read_text(encoding="utf-8")
        before = _problems(self.patches, self.result, self.upstream, omni)
        new = _problems(taken, after, self.upstream, omni) - before
        assert not new, f"{where}: verify reports {sorted(new)}"


def _case(name: str) -> tuple[PatchSet, api.Upstream, SyncResult]:
    patches, upstream, locations = inputs(CHOICES / name)
    return patches, upstream, _synced(patches, upstream, locations)


def test_a_candidate_that_would_run_a_call_twice_is_not_offered() -> None:
    """Omni moved `self.finalize()` out of the draft timer (edit-02 inserts it after the
    log, edit-01 deletes the old copy); upstream changed what edit-01 deletes, so it is a
    conflict, and edit-02 anywhere would run the call twice (upstream keeps its copy):
    none of its places is offered, and the conflict says why of each."""
    _, _, result = _case("a_moved_call_kept_by_a_conflict")
    rows = {p.block_id.rsplit(".", 1)[1]: p for p in result.placements}
    assert rows["edit-01"].status is Status.CONFLICT
    moved = rows["edit-02"]
    assert moved.status is Status.CONFLICT and moved.candidates == ()
    said = "`self.finalize()` would run 2 times in the method"
    assert said in moved.reason.split("no candidate works: ")[0]
    assert "no candidate works: line 11, line 7, line 6 (for the same reason)" in moved.reason


def test_a_place_deleting_upstream_code_the_block_never_replaced_is_not_offered() -> None:
    """The block replaced `if self.experts_ready: ...`, which upstream took out; its anchor
    finds places replacing one statement there, each one upstream's own (the kvpp calls,
    the `for req_id` loop): none is offered, each named with what it would delete."""
    _, _, result = _case("an_upstream_loop_beside_what_omni_replaced")
    (placed,) = [p for p in result.placements if p.status is Status.CONFLICT]
    assert placed.candidates == ()
    for line, deleted in ((7, "self.kvpp.start(batch)"), (8, "for req_id in batch.req_ids:")):
        said = f"line {line}, replacing 1 statement (it would delete upstream's `{deleted}`"
        assert said in placed.reason


# --- the command line: resolve, sync, verify, as a maintainer runs them -----------------------

CONFIG = """\
[tool.omni-port]
source = "omni.py"
base = "base.py"
upstream = "upstream.py"
patches = "p"
generated = "g"
"""


@pytest.fixture
def loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    """The loop case synced in a workspace: one conflict, no candidate offered."""
    return _workspace("an_upstream_loop_beside_what_omni_replaced", tmp_path, monkeypatch, cli)


def _workspace(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    for file in ("base.py", "omni.py", "upstream.py"):
        shutil.copy(CHOICES / name / file, tmp_path / file)
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Maintainer")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.org")
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 1
    return tmp_path


LOOP = "omni.R.execute.edit-01"
FOR_LINE = 8  # `for req_id in batch.req_ids:` in upstream.py


def _patch(work: Path) -> str:
    return (work / "p" / "omni" / "R.execute.edit-01.patch").read_text()


def _output(work: Path) -> str:
    return (work / "g" / "omni.py").read_text()


def test_at_a_line_of_upstream_code_the_block_never_replaced_is_refused(
    cli: Cli, loop: Path
) -> None:
    """The issue's case: `--at` the line of an upstream `for` loop had replaced the loop
    ("replacing 1 statement") and verify said nothing. Now it is refused, exit 2, naming
    the statement there and the way to say what to replace; nothing is recorded."""
    before = _patch(loop)
    refused = cli("resolve", LOOP, "--at", str(FOR_LINE))
    assert refused.exit_code == 2
    assert refused.stderr.startswith("p/omni/R.execute.edit-01.patch:1:1: OP005 ")
    assert f"line {FOR_LINE} holds `for req_id in batch.req_ids:`" in refused.stderr
    assert "`if self.experts_ready:`" in refused.stderr
    assert "`--replacing 0` puts the block before it" in refused.stderr
    assert _patch(loop) == before


def test_replacing_0_inserts_before_the_line_and_keeps_upstream_s_loop(
    cli: Cli, loop: Path
) -> None:
    done = cli.loud("resolve", LOOP, "--at", str(FOR_LINE), "--replacing", "0")
    assert done.exit_code == 0, done.stderr
    assert "goes after `self.kvpp.start(batch)` in the method body; run" in done.stderr
    assert "resolved-replaces:" not in _patch(loop)
    assert cli("sync").exit_code == 0
    body = _output(loop).split("def execute(self, batch):\n")[1]
    assert body.index("capturer.finish()") < body.index("for req_id in batch.req_ids:")
    assert cli("verify").exit_code == 0


@pytest.mark.parametrize("count", [1, 2])
def test_replacing_n_replaces_exactly_n_and_verify_reports_the_deleted_code(
    cli: Cli, loop: Path, count: int
) -> None:
    """Asked for, the block replaces exactly N statements from the line, each quoted in
    what resolve says; they are upstream code it never replaced: resolve says verify will
    report it, and verify does (OP514, at the block's line), until resolved otherwise."""
    done = cli.loud("resolve", LOOP, "--at", str(FOR_LINE), "--replacing", str(count))
    assert done.exit_code == 0, done.stderr
    plural = "statements" if count > 1 else "statement"
    assert f"replacing {count} {plural} (`for req_id in batch.req_ids:`" in done.stderr
    assert "which the block did not replace in its base: verify reports it (OP514)" in (done.stderr)
    assert _patch(loop).count("resolved-replaces: ") == count
    assert cli("sync").exit_code == 0
    output = _output(loop)
    assert "for req_id in batch.req_ids:" not in output
    assert ("self.kvpp.complete()" in output) is (count == 1)
    verified = cli("verify")
    assert verified.exit_code == 1
    (line,) = [line for line in verified.stdout.splitlines() if " OP514 " in line]
    start = output.split("\n").index("        capturer = self.capturer") + 1
    assert line.startswith(f"g/omni.py:{start}:1: OP514 the resolution of {LOOP} ")
    assert "by Ann Maintainer <ann@example.org>" in line


def test_replacing_more_than_the_body_holds_is_a_usage_error(cli: Cli, loop: Path) -> None:
    refused = cli("resolve", LOOP, "--at", str(FOR_LINE), "--replacing", "9")
    assert refused.exit_code == 2
    assert "--replacing 9: 3 statements from line 8" in refused.stderr
    assert cli("resolve", LOOP, "--at", "#1", "--replacing", "1").exit_code == 2


def test_at_a_line_of_what_the_block_replaced_replaces_only_that(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--at` the line of a statement the block replaced in its base replaces it, and not
    the upstream statement after it, though the block replaced two in its base."""
    work = _workspace("a_place_that_works", tmp_path, monkeypatch, cli)
    line = (work / "upstream.py").read_text().split("\n").index("        self.sync(tokens, 1)") + 1
    done = cli.loud("resolve", "omni.R.forward.edit-01", "--at", str(line))
    assert done.exit_code == 0, done.stderr
    assert "replacing 1 statement (`self.sync(tokens, 1)`)" in done.stderr
    patch = (work / "p" / "omni" / "R.forward.edit-01.patch").read_text()
    assert patch.count("resolved-replaces: ") == 1


def test_verify_reports_a_recorded_resolution_that_deletes_upstream_code(
    cli: Cli, loop: Path
) -> None:
    """A resolution recorded before resolve checked what it replaces (as `resolve --at 8`
    did in the issue) replays: the sync places the block there, and verify says so."""
    patch = loop / "p" / "omni" / "R.execute.edit-01.patch"
    text = patch.read_text().replace(
        "---\n",
        "resolved-after: self.kvpp.start(batch)\n"
        "resolved-replaces: for req_id in batch.req_ids: [body "
        + _body_digest(loop)
        + "]\nresolved-by: someone\nresolved-why: line 8 of upstream.py\n---\n",
        1,
    )
    patch.write_text(text)
    assert cli("sync").exit_code == 0
    verified = cli("verify")
    assert verified.exit_code == 1
    assert " OP514 the resolution of omni.R.execute.edit-01 recorded by someone " in (
        verified.stdout
    )
    assert "has it replace upstream's `for req_id in batch.req_ids:`" in verified.stdout
    assert cli("check", "--no-cache").exit_code == 1


def _body_digest(work: Path) -> str:
    """The body fingerprint of upstream's `for` loop, as a patch file records it."""
    from omni_port.pyast.syntax import find_member, full_key

    upstream = api.parse_upstream((work / "upstream.py").read_text(), "upstream.py")
    member = find_member(upstream.tree, "NPUModelRunner", "execute")
    assert member is not None
    (loop,) = [s for s in member.clauses[0].stmts if s.key.startswith("for ")]
    return full_key(loop).rsplit("[body ", 1)[1].rstrip("]")


def test_an_offered_candidate_resolves_by_the_command_and_the_runner_verifies(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow a maintainer runs on the candidates the closing lines of verify list."""
    work = _workspace("a_place_that_works", tmp_path, monkeypatch, cli)
    listed = cli.loud("verify")
    assert "resolve omni.R.forward.edit-01 --at '#K'    # #1 line 7, replacing 2" in (listed.stderr)
    assert "#2" not in listed.stderr
    done = cli.loud("resolve", "omni.R.forward.edit-01", "--at", "#1")
    assert done.exit_code == 0, done.stderr
    assert "replacing 2 statements (`self.flush(tokens)`; `self.sync(tokens, 1)`)" in done.stderr
    assert cli("sync").exit_code == 0
    assert cli("verify").exit_code == 0
    assert "self.sync(tokens, 2)" in (work / "g" / "omni.py").read_text()


def test_a_place_that_would_leave_a_body_empty_is_neither_offered_nor_taken(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Omni deleted `self.flush(y)`; upstream wrapped it in `if self.ready:`. Deleting the
    call alone would leave the `if` with no body (taken, the sync crashed, exit 123), and
    deleting `return y` deletes upstream code: neither is offered, and `--at 8` is refused.
    The `if` that holds only the call is offered, and works."""
    work = _workspace("a_deletion_upstream_wrapped_in_an_if", tmp_path, monkeypatch, cli)
    listed = cli.loud("verify")
    assert "--at '#K'    # #1 line 7, replacing 1 statement (0.60)\n" in listed.stderr
    refused = cli("resolve", "omni.R.step.edit-01", "--at", "8")
    assert refused.exit_code == 2
    assert "the module would not compile there" in refused.stderr
    done = cli.loud("resolve", "omni.R.step.edit-01", "--at", "#1")
    assert "replacing 1 statement (`if self.ready:`)" in done.stderr
    assert cli("sync").exit_code == 0
    assert cli("verify").exit_code == 0
    assert "return y" in (work / "g" / "omni.py").read_text()
