"""Do the two evidence modes agree? The next real upgrade (README, "Upgrade day") run with
releases only as upstream history and with a clone of vllm-ascend, compared method by
method and marked block by marked block.

Issue 44's bar: where the outputs differ, releases could not tell and the releases-only
output is a conflict there, never a different placement. Each difference is one row:

- **releases conflict**: the releases-only run left a conflict in that method (or on that
  marked block) and the clone's did not: the clone sharpened what releases cannot tell;
- **clone conflict**: the other way round;
- **different output**: both runs decided the method without a conflict, differently.

Implicit edits are compared through their methods (their numbering follows the base each
mode detected); marked blocks by their id, status and the statements around them.

    python bench/agree.py --upstream-repo CLONE [--keep DIR]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cold import UPGRADE, _workspace

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


def read_run(folder: Path) -> Run:
    """The generated modules and the JSON report an upgrade left in ``folder``."""
    methods: dict[str, str] = {}
    modules: dict[str, list[str]] = {}
    for module in sorted((folder / "generated").glob("*.py")):
        methods.update(_methods(module))
        modules[module.name] = module.read_text(encoding="utf-8").splitlines()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return Run(methods, {row["id"]: row for row in report["blocks"]}, modules)


def _methods(module: Path) -> Iterator[tuple[str, str]]:
    text = module.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                body = "".join(lines[first - 1 : item.end_lineno])
                yield f"{module.name}:{node.name}.{item.name}", body


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
    if releases and not clone:
        return "releases conflict"
    if clone and not releases:
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
        found.append(Difference(where, _kind(conflicts), conflicts))
    for ident in sorted(releases.blocks.keys() & clone.blocks.keys()):
        ours, theirs = releases.blocks[ident], clone.blocks[ident]
        if not ours["marked"] or _fate(releases, ours) == _fate(clone, theirs):
            continue
        conflicts = (
            (ident,) if ours["status"] == "conflict" else (),
            (ident,) if theirs["status"] == "conflict" else (),
        )
        found.append(Difference(ident, _kind(conflicts), conflicts))
    return found


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream-repo", type=Path, required=True, help="a vllm-ascend clone")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep both workspaces")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        parent = args.keep or Path(scratch)
        parent.mkdir(parents=True, exist_ok=True)
        runs = {}
        for mode in MODES:
            folder = _workspace(parent, mode, full=False)
            _upgrade(folder, args.upstream_repo if mode == "clone" else None)
            runs[mode] = read_run(folder)
    differences = compare(runs["releases"], runs["clone"])
    print("# Evidence modes on the next real upgrade: releases only vs a clone")
    print()
    print("| where | kind | conflicts (releases only) | conflicts (clone) |")
    print("| --- | --- | --- | --- |")
    for d in differences:
        print(
            f"| {d.where} | {d.kind} | {', '.join(d.conflicts[0])} | {', '.join(d.conflicts[1])} |"
        )
    print()
    kinds = [d.kind for d in differences]
    counts = ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds))) or "none"
    print(f"{len(differences)} differences: {counts}")
    return 1 if "different output" in kinds or "clone conflict" in kinds else 0


if __name__ == "__main__":
    raise SystemExit(main())
