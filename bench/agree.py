"""Do the two evidence modes agree? The next real upgrade (README, "Upgrade day") run with
releases only as upstream history and with a clone of vllm-ascend, compared method by
method and marked block by marked block.

Issue 44's bar: where the outputs differ, releases could not tell and the releases-only
output is a conflict there, never a different placement. Each difference is one row:

- **releases conflict**: the releases-only run left a conflict in that method (or on that
  marked block) and the clone's did not: the clone sharpened what releases cannot tell;
- **clone conflict**: the other way round;
- **both conflict**: both runs left a conflict there, and their outputs differ still (what
  the conflicts hold, or the code beside them): the releases-only output is a conflict;
- **same code**: both runs decided the method without a conflict, and their texts differ
  only in how the code is written (the same syntax tree);
- **different output**: both runs decided the method without a conflict, differently.

Implicit edits are compared through their methods (their numbering follows the base each
mode detected); marked blocks by their id, status and the statements around them.

    python bench/agree.py --upstream-repo CLONE [--keep DIR]

``--replay`` runs every step of ``bench/replay.py`` instead (``--steps OLD:NEW ...`` for
some): each step's blocks, extracted against its old base, synced onto its new upstream
with the releases around them as history and with the clone's commits (the same base and
the same patches: only the evidence differs), and the differences listed per step.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cold import UPGRADE, _workspace
from bench.history import ASCEND_RELEASES, History
from bench.replay import LONG_STEPS, _extract, consecutive, plan_steps, upstream_of
from omni_port import api
from omni_port.report import placement_dict
from omni_port.sources.upstream import default_cache

OMNI_PORT = [sys.executable, "-m", "omni_port", "-q"]
MODES = ("releases", "clone")


@dataclass(frozen=True, slots=True)
class Run:
    """What one mode's upgrade wrote: method texts and the report's blocks."""

    #: ``module:Class.method`` to its text in the generated module.
    methods: Mapping[str, str]
    #: Block id to its report row.
    blocks: Mapping[str, Mapping[str, object]]
    #: Generated module name to its lines.
    modules: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Difference:
    """One method or marked block whose output differs between the modes."""

    where: str
    kind: str
    #: The conflicts each mode left there (block ids), releases first.
    conflicts: tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Agreement:
    """The differences between the modes on one upgrade."""

    upgrade: str
    differences: Sequence[Difference]


def read_run(folder: Path) -> Run:
    """The generated modules and the JSON report an upgrade left in ``folder``."""
    texts = {
        module.name: module.read_text(encoding="utf-8")
        for module in sorted((folder / "generated").glob("*.py"))
    }
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return run_of(texts, report["blocks"])


def run_of(texts: Mapping[str, str], rows: Iterable[Mapping[str, object]]) -> Run:
    """The run of generated modules (name to text) and the report's block rows."""
    methods: dict[str, str] = {}
    for name in sorted(texts):
        methods.update(_methods(name, texts[name]))
    modules = {name: text.splitlines() for name, text in texts.items()}
    return Run(methods, {str(row["id"]): row for row in rows}, modules)


def _methods(name: str, text: str) -> Iterator[tuple[str, str]]:
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                body = "".join(lines[first - 1 : item.end_lineno])
                yield f"{name}:{node.name}.{item.name}", body


def _conflicts(run: Run, where: str) -> tuple[str, ...]:
    """The blocks left in conflict in the method ``where`` (``module:Class.method``)."""
    module, _, qualified = where.partition(":")
    owner, _, method = qualified.partition(".")
    return tuple(
        sorted(
            str(row["id"])
            for row in run.blocks.values()
            if row["status"] == "conflict"
            and (row["module"], row["class"], row["method"]) == (module, owner, method)
        )
    )


def _kind(conflicts: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    releases, clone = conflicts
    if releases and clone:
        return "both conflict"
    if releases:
        return "releases conflict"
    if clone:
        return "clone conflict"
    return "different output"


def compare(releases: Run, clone: Run) -> list[Difference]:
    """Every method whose text differs (or that one mode lacks), and every marked block
    whose status or neighbours differ, releases-only first in each pair."""
    found: list[Difference] = []
    for where in sorted(releases.methods.keys() | clone.methods.keys()):
        if releases.methods.get(where) == clone.methods.get(where):
            continue
        conflicts = (_conflicts(releases, where), _conflicts(clone, where))
        same = _same_code(releases.methods.get(where), clone.methods.get(where))
        kind = "same code" if same and not any(conflicts) else _kind(conflicts)
        found.append(Difference(where, kind, conflicts))
    for ident in sorted(releases.blocks.keys() & clone.blocks.keys()):
        ours, theirs = releases.blocks[ident], clone.blocks[ident]
        if not ours["marked"] or _fate(releases, ours) == _fate(clone, theirs):
            continue
        # Placed in both, its neighbouring lines may differ by a conflict of its method
        # (commented out beside it): that conflict is what differs.
        where = f"{ours['module']}:{ours['class']}.{ours['method']}"
        conflicts = (
            (ident,) if ours["status"] == "conflict" else _conflicts(releases, where),
            (ident,) if theirs["status"] == "conflict" else _conflicts(clone, where),
        )
        found.append(Difference(ident, _kind(conflicts), conflicts))
    return found


def _same_code(ours: str | None, theirs: str | None) -> bool:
    """Whether two texts of a method are the same code written differently (the same
    syntax tree: one mode kept omni's text of a statement, the other upstream's)."""
    if ours is None or theirs is None:
        return False
    try:
        trees = [ast.dump(ast.parse(textwrap.dedent(text))) for text in (ours, theirs)]
    except SyntaxError:
        return False
    return trees[0] == trees[1]


def _fate(run: Run, row: Mapping[str, object]) -> tuple[object, ...]:
    """A marked block's status and the code lines right around it in the output."""
    if row["status"] == "conflict":
        return (row["status"],)
    lines = run.modules.get(str(row["module"]), [])
    lines_of = row["lines"]
    assert isinstance(lines_of, list | tuple)
    start, end = int(lines_of[0]), int(lines_of[1])
    return (row["status"], _code_line(reversed(lines[: start - 1])), _code_line(lines[end:]))


def _code_line(lines: Iterable[str]) -> str:
    """The first line of code (no blank line, no comment) of ``lines``."""
    return next((s for line in lines if (s := line.strip()) and not s.startswith("#")), "")


def _upgrade(folder: Path, clone: Path | None) -> None:
    history = ["--upstream-repo", str(clone)] if clone else []
    command = [*OMNI_PORT, *history, *UPGRADE, "--json", "report.json"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr}")


def replay_steps(clone: Path, requested: Sequence[str], cache: Path) -> Iterator[Agreement]:
    """Each step of ``bench/replay.py`` (``requested`` as ``OLD:NEW``, or its default
    steps), synced with releases only and with the clone's commits as history."""
    histories = {"releases": History(cache), "clone": History(cache, repo=str(clone.resolve()))}
    plain = histories["releases"]
    wanted = list(requested) or [
        *consecutive(plain, ASCEND_RELEASES),
        *(f"{a}:{b}" for a, b in LONG_STEPS),
    ]
    for step in plan_steps(plain, ASCEND_RELEASES, wanted):
        patches = _extract(plain, step.old, plain.base(step.old_base), True)
        runs = {}
        for mode, history in histories.items():
            target = upstream_of(history, step.new_base, step.old_base)
            given = api.run.Given(offer=False)
            result = api.sync_patches(patches, target, "bench", given, tool="bench").result
            texts = {
                name: data.decode("utf-8")
                for name, data in result.files.items()
                if name.endswith(".py")
            }
            runs[mode] = run_of(texts, [placement_dict(p) for p in result.placements])
        step_name = f"{step.old} -> {step.new} ({step.old_base} -> {step.new_base})"
        yield Agreement(step_name, compare(runs["releases"], runs["clone"]))


def _print(agreements: Sequence[Agreement], title: str) -> list[str]:
    """Print the table of differences (a step column when there are several upgrades) and
    the counts; the kinds found."""
    steps = len(agreements) > 1
    print(f"# {title}: releases only vs a clone")
    print()
    print(
        ("| step " if steps else "")
        + "| where | kind | conflicts (releases only) | conflicts (clone) |"
    )
    print(("| --- " if steps else "") + "| --- | --- | --- | --- |")
    for agreement in agreements:
        for d in agreement.differences:
            first = f"| {agreement.upgrade} " if steps else ""
            print(
                f"{first}| {d.where} | {d.kind} | {', '.join(d.conflicts[0])} | "
                f"{', '.join(d.conflicts[1])} |"
            )
    print()
    kinds = [d.kind for a in agreements for d in a.differences]
    counts = ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds))) or "none"
    if steps:
        for agreement in agreements:
            print(f"- {agreement.upgrade}: {len(agreement.differences)} differences")
    print(f"{len(kinds)} differences: {counts}")
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream-repo", type=Path, required=True, help="a vllm-ascend clone")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep both workspaces")
    parser.add_argument("--replay", action="store_true", help="every bench/replay.py step")
    parser.add_argument("--steps", nargs="*", default=[], help="with --replay: OLD:NEW steps")
    args = parser.parse_args()
    if args.replay:
        found = list(replay_steps(args.upstream_repo, args.steps, default_cache()))
        kinds = _print(found, "Evidence modes on the replay's steps")
    else:
        with tempfile.TemporaryDirectory() as scratch:
            parent = args.keep or Path(scratch)
            parent.mkdir(parents=True, exist_ok=True)
            runs = {}
            for mode in MODES:
                folder = _workspace(parent, mode, full=False)
                _upgrade(folder, args.upstream_repo if mode == "clone" else None)
                runs[mode] = read_run(folder)
        upgrade = Agreement("next upgrade", compare(runs["releases"], runs["clone"]))
        kinds = _print([upgrade], "Evidence modes on the next real upgrade")
    return 1 if "different output" in kinds or "clone conflict" in kinds else 0


if __name__ == "__main__":
    raise SystemExit(main())
