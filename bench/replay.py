"""Placement accuracy on real upgrade history, against what the maintainers wrote.

For each step N -> M: extract release N's blocks (against N's upstream base), sync them
onto M's upstream, and compare every block that exists in both N and M with its place in
release M. Run ``python bench/replay.py --help``; ``make bench`` runs the default set.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import baselines
from bench.history import (
    ASCEND_CANDIDATES,
    ASCEND_RELEASES,
    OMNI_RELEASES,
    History,
    Step,
    positions,
)
from bench.score import OUTCOMES, Tally, score
from omni_port import api
from omni_port.model import PatchSet, Placement, Release, Rule, SourceText, Status, Upstream
from omni_port.sources.history import labels, load, window
from omni_port.sources.platform import NPU
from omni_port.sources.textio import decode
from omni_port.sources.upstream import default_cache
from omni_port.verify.context import overrides_of
from omni_port.verify.repeats import repeats


def plan_steps(
    history: History, candidates: tuple[str, ...], requested: list[str], detect: bool = False
) -> list[Step]:
    """The steps ``requested`` (``OLD:NEW``), each with its two bases from the pairing
    table; with ``detect``, OLD's base as a maintainer upgrading on the day NEW came out
    finds it (``--base detect`` over the releases out by then). NEW's base is what the
    maintainers synced onto (a maintainer names it: ``--to``); detected as of that day
    it is sometimes an older release, since they ported from main before the release
    that matches their runners best came out."""
    chosen = [tuple(s.split(":")) for s in requested]
    pairs = {v: history.pairing(v, candidates).label for v in OMNI_RELEASES}
    if detect:
        return [Step(a, b, history.detected(a, history.out_on(b)), pairs[b]) for a, b in chosen]
    return [Step(a, b, pairs[a], pairs[b]) for a, b in chosen]


def upstream_of(history: History, version: str, old_base: str = "") -> Upstream:
    """The upstream of release ``version``, with the releases from six months before
    ``old_base`` (or from the NPU floor, when older) up to it as upstream history (none
    without ``old_base``), as sync's ``history = auto`` picks them (among the candidates)."""
    upstream = history.base(version)
    if not old_base:
        return upstream
    if history.repo:
        # As sync's ``history = auto`` picks them with ``upstream-repo``: the clone's
        # commits around the base on its lineage, then releases newer than the clone.
        names = labels(history.spec(old_base), history.spec(version), history.cache, history.repo)
        return replace(upstream, history=load(names, history.cache)[0])
    releases = tuple(
        Release(f"vllm-ascend=={v}", history.ascend(v).text, history.cache)
        for v in window(history.released(), old_base, version, NPU.floor)
    )
    return replace(upstream, history=releases)


def _extract(history: History, version: str, base: Upstream, implicit: bool) -> PatchSet:
    options = api.ExtractOptions(lenient=True, implicit=implicit)
    return api.extract(history.runners(version), base, options)[0]


#: Upgrades that skip releases: a maintainer who waited (reported in a table of their own).
LONG_STEPS = (("0.14.0", "0.30.0"), ("0.16.0", "0.24.0"), ("0.20.0", "0.30.0"))
#: Decision rules counted per step (the anchor alone is the rest).
COUNTED = (
    Rule.CONVERGENT,
    Rule.UPSTREAM_HISTORY,
    Rule.INTENT,
    Rule.MERGE3,
    Rule.DATAFLOW,
    Rule.LAYOUT,
    Rule.ORDER,
    Rule.CATALOG,
    Rule.COUNTERPART,
    Rule.STEPWISE,
)


@dataclass(slots=True)
class Run:
    """What one step of omni-port gave: tallies, the decisions by rule, the time."""

    marked: Tally
    edits: Tally
    #: Decisions by rule over every block and edit of N; ``followed`` (``lags`` of them:
    #: a release older than the base held the code) and ``conflict`` too.
    rules: Counter[str]
    elapsed: float
    #: Call statements a generated method runs more often than both the new upstream
    #: method and the old runner's (OP512): omni's old copy of code upstream moved.
    repeated: int = 0


def run_omni_port(
    history: History,
    step: Step,
    implicit: bool,
    use_history: bool = True,
    catalog: Path | None = None,
) -> Run:
    """Marked-block and unmarked-edit tallies of one step, its rules and the sync's time;
    with ``catalog``, its Location lines constrain the places."""
    base = history.base(step.old_base)
    patches = _extract(history, step.old, base, implicit)
    started = time.perf_counter()
    target = upstream_of(history, step.new_base, step.old_base if use_history else "")
    locations = api.inputs.catalog_locations(patches, catalog)
    # The engine's candidates, every one: is the maintainers' place among them.
    given = api.run.Given(locations=locations, offer=False)
    result = api.sync_patches(patches, target, "bench", given, tool="bench").result
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
    before = [r.label for r in target.history]
    at = before.index(history.spec(step.old_base)) if history.spec(step.old_base) in before else 0
    rules = rule_counts(result.placements, frozenset(before[:at]))
    repeated = run_twice(generated, history.omni(step.old), new_base, patches)
    return Run(marked, edits, rules, elapsed, repeated)


def run_twice(
    generated: dict[str, SourceText],
    old: dict[str, SourceText],
    upstream: Upstream,
    patches: PatchSet,
) -> int:
    """How many call statements the generated runners run more often than both the new
    upstream and the old runners do (verify's OP512, counted without the packages)."""
    theirs = ast.parse(upstream.text)
    overrides = overrides_of(patches)
    return sum(
        len(
            repeats(
                name,
                ast.parse(source.text),
                ast.parse(old[name].text),
                theirs,
                [o for o in overrides if o.module == name],
            )
        )
        for name, source in generated.items()
        if name in old
    )


def rule_counts(placements: Sequence[Placement], older: frozenset[str]) -> Counter[str]:
    """How many decisions each rule took part in, beside the followed (the lags among
    them: code of a release or commit ``older`` than the base) and the conflicts."""
    counts: Counter[str] = Counter()
    for placement in placements:
        if placement.status is Status.CONFLICT:
            counts["conflict"] += 1
        if placement.status is Status.FOLLOWED:
            counts["followed"] += 1
            if placement.release in older:
                counts["lags"] += 1
        for rule in placement.decided_by:
            if rule in COUNTED:
                counts[rule.value] += 1
    return counts


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
            bases = f"{shown(step.old_base)} -> {shown(step.new_base)}"
            _row(f"{step.old} -> {step.new}", bases, tool, tally)
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


def shown(base: str) -> str:
    """A base as the tables show it: a release's version, or a clone's ``repo@REV``."""
    return base.rsplit("/", 1)[-1]


def _row(step: str, upstream: str, tool: str, tally: Tally) -> None:
    c = tally.counts
    common = sum(c[o] for o in OUTCOMES)
    share = f" ({100 * c['correct'] / common:.0f}%)" if common else ""
    flagged = f"{c['flagged']} ({tally.flagged_with_candidate})"
    print(
        f"| {step} | {upstream} | {tool} | {common} | {c['correct']}{share} | {flagged} | "
        f"{c['followed']} | {c['wrong']} | {c['missing']} |"
    )


def print_rules(runs: list[tuple[Step, Run]]) -> None:
    """Per step: how many blocks and edits each rule decided (beyond the anchor alone)."""
    columns = [rule.value for rule in COUNTED]
    print("\n## Decided by rules beyond the anchor (blocks and edits of N)\n")
    extra = ("followed", "lags", "conflict", "repeated")
    print(
        "| step | "
        + " | ".join(columns)
        + " | followed | lags followed | conflicts | run twice (OP512) |"
    )
    print("| --- |" + " ---: |" * (len(columns) + len(extra)))
    total: Counter[str] = Counter()
    for step, run in runs:
        counts = Counter({**run.rules, "repeated": run.repeated})
        total.update(counts)
        cells = [str(counts[c]) for c in (*columns, *extra)]
        print(f"| {step.old} -> {step.new} | " + " | ".join(cells) + " |")
    cells = [str(total[c]) for c in (*columns, *extra)]
    print("| **total** | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--upstreams",
        choices=("final", "all"),
        default="final",
        help="bases: final releases only (0.13.0/0.18.0/0.23.0) or every wheel incl. rc",
    )
    parser.add_argument(
        "--steps",
        nargs="*",
        default=[],
        help="steps as OLD:NEW omni versions (default: consecutive releases and long steps)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="only omni-port")
    parser.add_argument(
        "--no-implicit", action="store_true", help="marked blocks only (before issue 9)"
    )
    parser.add_argument(
        "--no-history", action="store_true", help="no upstream history (before issue 15)"
    )
    parser.add_argument(
        "--catalog", type=Path, help="a catalog whose Location lines constrain places"
    )
    parser.add_argument(
        "--base",
        choices=("pairing", "detect"),
        default="pairing",
        help="OLD's base: the pairing table's, or found as `--base detect` finds it on the "
        "day NEW came out (every release since 0.13.0 out by then; history from all of them)",
    )
    parser.add_argument(
        "--upstream-repo",
        type=Path,
        help="a clone of vllm-ascend: upstream history from its commits, and with --base "
        "detect OLD's base among the commits made by the day NEW came out (as `omni-port "
        "--upstream-repo CLONE upgrade --base detect` ranks them)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list every non-correct block")
    parser.add_argument("--cache-dir", type=Path, default=default_cache())
    args = parser.parse_args(argv)

    detect = args.base == "detect"
    repo = str(args.upstream_repo.resolve()) if args.upstream_repo else ""
    history = History(args.cache_dir, every=detect, repo=repo)
    candidates = ASCEND_RELEASES if args.upstreams == "final" else ASCEND_CANDIDATES
    print(
        f"# Placement replay ({time.strftime('%Y-%m-%d')}, upstream candidates: {args.upstreams})\n"
    )
    print("| vllm-omni | paired vllm-ascend | similarity |\n| --- | --- | ---: |")
    for version in OMNI_RELEASES:
        paired = history.pairing(version, candidates)
        print(f"| {version} | {paired.label} | {paired.similarity:.3f} |")
    requested = args.steps or [
        *consecutive(history, candidates),
        *(f"{a}:{b}" for a, b in LONG_STEPS),
    ]
    steps = plan_steps(history, candidates, requested, detect)
    if detect:
        print("\n| step | OLD's base (`--base detect` on the day NEW came out) | paired |")
        print("| --- | --- | --- |")
        for step in steps:
            table = history.pairing(step.old, candidates).label
            print(f"| {step.old} -> {step.new} | {shown(step.old_base)} | {table} |")
    runs: list[tuple[Step, Run]] = []
    results: list[tuple[Step, dict[str, Tally]]] = []
    edit_results: list[tuple[Step, dict[str, Tally]]] = []
    for step in steps:
        run = run_omni_port(history, step, not args.no_implicit, not args.no_history, args.catalog)
        tallies = {"omni-port": run.marked}
        if not args.no_baselines:
            tallies["git merge-file"] = baselines.run(history, step, "merge-file")
            tallies["patch"] = baselines.run(history, step, "patch")
        runs.append((step, run))
        results.append((step, tallies))
        edit_results.append((step, {"omni-port": run.edits}))
    for title, kept in (("consecutive releases", False), ("long steps, skipping releases", True)):
        chosen = [r for r in results if is_long(r[0]) is kept]
        if chosen:
            print_table(f"Marked blocks present in both releases ({title})", chosen, args.verbose)
            edits = [r for r in edit_results if is_long(r[0]) is kept]
            print_table(f"Unmarked edits present in both releases ({title})", edits, args.verbose)
    print_rules(runs)
    return 0


def consecutive(history: History, candidates: tuple[str, ...]) -> list[str]:
    """Steps between consecutive releases whose upstreams differ."""
    pairs = {v: history.pairing(v, candidates).label for v in OMNI_RELEASES}
    steps = itertools.pairwise(OMNI_RELEASES)
    return [f"{a}:{b}" for a, b in steps if pairs[a] != pairs[b]]


def is_long(step: Step) -> bool:
    """A step that skips at least one release."""
    return OMNI_RELEASES.index(step.new) - OMNI_RELEASES.index(step.old) > 1


if __name__ == "__main__":
    raise SystemExit(main())
