"""Placement accuracy on real upgrade history, against what the maintainers wrote.

For each step N -> M: extract release N's blocks (against N's upstream base), sync them
onto M's upstream, and compare every block that exists in both N and M with its place in
release M. Run ``python bench/replay.py --help``; ``make bench`` runs the default set.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import baselines
from bench.history import (
    ASCEND_CANDIDATES,
    ASCEND_RELEASES,
    OMNI_RELEASES,
    History,
    Position,
    match,
    normalize_code,
    positions,
)
from omni_port import api
from omni_port.model import Block, PatchSet, Placement, Status
from omni_port.pyast.syntax import Suite, Tree
from omni_port.sources.history import BEFORE_BASE
from omni_port.sources.textio import decode
from omni_port.sources.upstream import Release, Upstream, default_cache

OUTCOMES = ("correct", "flagged", "followed", "wrong", "missing")


@dataclass(slots=True)
class Tally:
    """Outcomes of one tool on one step."""

    counts: Counter[str] = field(default_factory=Counter)
    #: Flagged blocks whose right place is among their candidates.
    flagged_with_candidate: int = 0
    #: (block, outcome, detail) for the report.
    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, block: str, outcome: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        self.rows.append((block, outcome, detail))


@dataclass(frozen=True, slots=True)
class Step:
    old: str
    new: str
    old_base: str
    new_base: str


def plan_steps(history: History, candidates: tuple[str, ...], requested: list[str]) -> list[Step]:
    pairs = {v: history.pairing(v, candidates).label for v in OMNI_RELEASES}
    if requested:
        chosen = [tuple(s.split(":")) for s in requested]
    else:
        chosen = [(a, b) for a, b in itertools.pairwise(OMNI_RELEASES) if pairs[a] != pairs[b]]
    return [Step(a, b, pairs[a], pairs[b]) for a, b in chosen]


def upstream_of(history: History, version: str, old_base: str = "") -> Upstream:
    """The upstream of release ``version``, with the releases from a little before
    ``old_base`` up to it as upstream history (none without ``old_base``), as sync's
    ``history = auto`` picks them from the wheels on PyPI."""
    upstream = history.base(version)
    if not old_base:
        return upstream
    order = list(ASCEND_CANDIDATES)
    low = max(order.index(old_base) - BEFORE_BASE, 0)
    releases = tuple(
        Release(f"vllm-ascend=={v}", history.ascend(v).text)
        for v in order[low : order.index(version) + 1]
    )
    return replace(upstream, history=releases)


def _extract(history: History, version: str, base: Upstream, implicit: bool) -> PatchSet:
    options = api.ExtractOptions(lenient=True, implicit=implicit)
    located = [api.Located(s.path, name, s) for name, s in history.omni(version).items()]
    return api.extract(located, base, options)[0]


def run_omni_port(
    history: History, step: Step, implicit: bool, use_history: bool = True
) -> tuple[Tally, Tally, float]:
    """Marked-block and unmarked-edit tallies of one step, and the sync's wall time."""
    base = history.base(step.old_base)
    patches = _extract(history, step.old, base, implicit)
    started = time.perf_counter()
    target = upstream_of(history, step.new_base, step.old_base if use_history else "")
    result = api.sync_patches(patches, target, command="bench", tool="bench").result
    elapsed = time.perf_counter() - started
    generated = {
        name: decode(data, f"generated/{name}")
        for name, data in result.files.items()
        if name.endswith(".py")
    }
    new_base = history.base(step.new_base)
    truth = positions(history.omni(step.new), new_base)
    got = positions(generated, new_base)
    upstream = history.ascend_tree(step.new_base)
    output = {name: source.text.split("\n") for name, source in generated.items()}
    marked = score(patches, result.placements, truth, got, upstream, output=output)
    # Unmarked edits of N, whether or not this run carried them: lost ones count as missing.
    every = patches if implicit else _extract(history, step.old, base, True)
    truth_edits = positions(history.omni(step.new), new_base, marked=False)
    got_edits = positions(generated, new_base, marked=False)
    edits = score(
        every, result.placements, truth_edits, got_edits, upstream, marked=False, output=output
    )
    return marked, edits, elapsed


def _ours(patches: PatchSet, marked: bool) -> list[tuple[Block, Position]]:
    found = []
    for module in patches.modules:
        for piece in module.pieces:
            if isinstance(piece, Block) and piece.marked == marked and piece.code.strip():
                position = Position(
                    module.name,
                    piece.owner,
                    piece.member,
                    piece.anchor.path,
                    "",
                    "",
                    normalize_code(piece.code),
                )
                found.append((piece, position))
    return found


def score(
    patches: PatchSet,
    placements: tuple[Placement, ...],
    truth: list[Position],
    got: list[Position],
    upstream: Tree,
    marked: bool = True,
    output: dict[str, list[str]] | None = None,
) -> Tally:
    tally = Tally()
    ours = _ours(patches, marked)
    status = {p.block_id: p for p in placements}
    to_truth = match([p for _, p in ours], truth)
    # A merged block reads as the sync wrote it, not as release N had it.
    placed = [_as_placed(position, status.get(block.id), output) for block, position in ours]
    to_got = match(placed, got, threshold=0.999)
    to_got.update(_merged_matches(placed, got, to_got))
    for index, (block, _) in enumerate(ours):
        if index not in to_truth:
            continue
        expected = truth[to_truth[index]]
        placement = status.get(block.id)
        if placement is not None and placement.status is Status.CONFLICT:
            tally.add(block.id, "flagged", placement.reason)
            if _right_candidate(placement, expected, upstream):
                tally.flagged_with_candidate += 1
            continue
        if placement is not None and placement.status is Status.FOLLOWED:
            # Upstream history called it upstream code (a lag or drift) and the sync
            # followed the new upstream, said so; the maintainers kept it.
            tally.add(block.id, "followed", placement.reason)
            continue
        if index not in to_got:
            tally.add(block.id, "missing")
            continue
        actual = got[to_got[index]]
        if actual.same_place(expected):
            tally.add(block.id, "correct")
        else:
            tally.add(block.id, "wrong", _difference(actual, expected))
    return tally


def _as_placed(
    position: Position, placement: Placement | None, output: dict[str, list[str]] | None
) -> Position:
    """``position`` with the code the sync wrote for it (a merge changes the code)."""
    if placement is None or output is None or not placement.start or not placement.decided_by:
        return position
    lines = output.get(placement.module, [])[placement.start - 1 : placement.end]
    return replace(position, code=normalize_code("\n".join(lines)))


def _merged_matches(
    placed: list[Position], got: list[Position], taken: dict[int, int]
) -> dict[int, int]:
    """Merged blocks hold upstream code too: the generated edit inside the merged text
    (extracting the output against M's base sees only omni's part of it) is theirs."""
    used = set(taken.values())
    found: dict[int, int] = {}
    for index, ours in enumerate(placed):
        if index in taken or not ours.code:
            continue
        for other, theirs in enumerate(got):
            same = (ours.module, ours.owner, ours.member) == (
                theirs.module,
                theirs.owner,
                theirs.member,
            )
            if same and other not in used and theirs.code and theirs.code in ours.code:
                found[index] = other
                used.add(other)
                break
    return found


def _right_candidate(placement: Placement, expected: Position, upstream: Tree) -> bool:
    """Whether a candidate is the maintainers' place: same body and the same upstream
    statement on one side. A candidate names the statement at its line (the first one a
    replacement replaces), so the statement before it comes from the upstream tree."""
    for candidate in placement.candidates:
        if candidate.path != expected.path:
            continue
        before = _statement_before(upstream.body, candidate.line)
        if candidate.text == expected.after or (before is not None and before == expected.before):
            return True
    return False


def _statement_before(suite: Suite, line: int) -> str | None:
    """Key of the statement just before the one starting at ``line`` ("" when it is first
    in its body); None when no statement starts there."""
    for index, stmt in enumerate(suite.stmts):
        if stmt.start == line:
            return suite.stmts[index - 1].key if index else ""
        if stmt.start < line <= stmt.full_end:
            for clause in stmt.clauses:
                found = _statement_before(clause, line)
                if found is not None:
                    return found
    return None


def _difference(actual: Position, expected: Position) -> str:
    parts = []
    if actual.member != expected.member:
        parts.append(f"member {actual.member} vs {expected.member}")
    if actual.path != expected.path:
        parts.append(f"path {actual.path[-1:]} vs {expected.path[-1:]}")
    if actual.before != expected.before:
        parts.append(f"after `{actual.before[:50]}` vs `{expected.before[:50]}`")
    if actual.after != expected.after:
        parts.append(f"before `{actual.after[:50]}` vs `{expected.after[:50]}`")
    return "; ".join(parts)


def print_table(title: str, results: list[tuple[Step, dict[str, Tally]]], verbose: bool) -> None:
    tools = list(results[0][1]) if results else []
    print(f"\n## {title}\n")
    header = (
        "| step | upstream | tool | common | correct | flagged (right place listed) | followed "
        "| wrong | missing |"
    )
    print(header)
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    totals = {tool: Tally() for tool in tools}
    for step, tallies in results:
        for tool in tools:
            tally = tallies[tool]
            _row(f"{step.old} -> {step.new}", f"{step.old_base} -> {step.new_base}", tool, tally)
            totals[tool].counts.update(tally.counts)
            totals[tool].flagged_with_candidate += tally.flagged_with_candidate
    for tool in tools:
        _row("**total**", "", tool, totals[tool])
    if verbose:
        for step, tallies in results:
            for tool, tally in tallies.items():
                for block, outcome, detail in tally.rows:
                    if outcome != "correct":
                        print(f"  {step.old}->{step.new} {tool}: {outcome:8} {block} {detail}")


def _row(step: str, upstream: str, tool: str, tally: Tally) -> None:
    c = tally.counts
    common = sum(c[o] for o in OUTCOMES)
    share = f" ({100 * c['correct'] / common:.0f}%)" if common else ""
    flagged = f"{c['flagged']} ({tally.flagged_with_candidate})"
    print(
        f"| {step} | {upstream} | {tool} | {common} | {c['correct']}{share} | {flagged} | "
        f"{c['followed']} | {c['wrong']} | {c['missing']} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--upstreams",
        choices=("final", "all"),
        default="final",
        help="bases: final releases only (0.13.0/0.18.0/0.23.0) or every wheel incl. rc",
    )
    parser.add_argument("--steps", nargs="*", default=[], help="steps as OLD:NEW omni versions")
    parser.add_argument("--no-baselines", action="store_true", help="only omni-port")
    parser.add_argument(
        "--no-implicit", action="store_true", help="marked blocks only (before issue 9)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list every non-correct block")
    parser.add_argument("--cache-dir", type=Path, default=default_cache())
    args = parser.parse_args(argv)

    history = History(args.cache_dir)
    candidates = ASCEND_RELEASES if args.upstreams == "final" else ASCEND_CANDIDATES
    print(
        f"# Placement replay ({time.strftime('%Y-%m-%d')}, upstream candidates: {args.upstreams})\n"
    )
    print("| vllm-omni | paired vllm-ascend | similarity |\n| --- | --- | ---: |")
    for version in OMNI_RELEASES:
        paired = history.pairing(version, candidates)
        print(f"| {version} | {paired.label} | {paired.similarity:.3f} |")
    steps = plan_steps(history, candidates, args.steps)
    results, edit_results = [], []
    for step in steps:
        tallies: dict[str, Tally] = {}
        tallies["omni-port"], edits, _ = run_omni_port(history, step, implicit=not args.no_implicit)
        if not args.no_baselines:
            tallies["git merge-file"] = baselines.run(history, step, "merge-file")
            tallies["patch"] = baselines.run(history, step, "patch")
        results.append((step, tallies))
        edit_results.append((step, {"omni-port": edits}))
    print_table("Marked blocks present in both releases", results, args.verbose)
    print_table("Unmarked edits present in both releases", edit_results, args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
