"""Scale: extract and sync on a synthetic 20,000-line upstream with 200 marked blocks.

Prints the wall time of each stage (median of three runs), the peak memory, how many
blocks were placed or conflicted, and the time ratios between 1/4, 1/2 and full size (a
linear stage doubles with the size; a quadratic one quadruples). Run it with
``python bench/scale.py`` (``--help`` for the sizes); it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import random
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omni_port import api
from omni_port.api.run import SyncResult
from omni_port.model import ModulePatches, PatchSet, Status
from omni_port.pyast.parser import parse

R = TypeVar("R")
MARK = "# ---------- Omni-new ----------"


@dataclass
class Stmt:
    id: int
    text: str
    body: list[Stmt] | None = None


@dataclass
class Synthetic:
    base: str
    omni: str
    v2: str
    lines: int
    blocks: int


class Generator:
    """A deterministic synthetic runner family: upstream, omni copy, edited upstream."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.count = 0

    def stmt(self, depth: int) -> Stmt:
        self.count += 1
        n = self.count
        roll = self.random.random()
        if depth < 3 and roll < 0.15:
            size = self.random.randint(2, 6)
            return Stmt(
                n, f"with self.ctx{n}x(batch):", [self.stmt(depth + 1) for _ in range(size)]
            )
        if depth < 3 and roll < 0.25:
            size = self.random.randint(2, 5)
            return Stmt(n, f"if self.cond{n}x:", [self.stmt(depth + 1) for _ in range(size)])
        if roll < 0.6:
            return Stmt(n, f"self.value{n}x = self.compute{n}x(batch, self.value{n - 1}x)")
        return Stmt(n, f"self.step{n}x(batch)")

    def method(self, statements: int) -> list[Stmt]:
        body: list[Stmt] = []
        while _size(body) < statements:
            body.append(self.stmt(0))
        return body


def _size(body: list[Stmt]) -> int:
    return sum(1 + _size(s.body or []) for s in body)


def _render(body: list[Stmt], indent: str, blocks: dict[int, list[str]], out: list[str]) -> None:
    for stmt in body:
        for line in blocks.get(stmt.id, []):
            out.append(indent + line)
        out.append(indent + stmt.text)
        if stmt.body is not None:
            _render(stmt.body, indent + "    ", blocks, out)


def _module(
    header: list[str], methods: list[tuple[str, list[Stmt]]], blocks: dict[int, list[str]]
) -> str:
    out = list(header)
    for name, body in methods:
        out += ["", f"    def {name}(self, batch):"]
        _render(body, " " * 8, blocks, out)
    return "\n".join(out) + "\n"


def _walk(body: list[Stmt]) -> list[Stmt]:
    return [s for stmt in body for s in (stmt, *_walk(stmt.body or []))]


def _edit(gen: Generator, body: list[Stmt], every: int) -> list[Stmt]:
    """A new upstream body: an unrelated statement inserted every ``every`` statements,
    some statements changed, and now and then a run wrapped in a new ``with``."""
    result: list[Stmt] = []
    for stmt in body:
        roll = gen.random.random()
        inner = _edit(gen, stmt.body, every) if stmt.body is not None else None
        text = stmt.text
        if stmt.body is None and roll < 1 / (2 * every):
            text = text.replace("(batch", "(batch, 1", 1)
        result.append(Stmt(stmt.id, text, inner))
        if roll > 1 - 1 / every:
            gen.count += 1
            result.append(Stmt(gen.count, f"self.upstream_new{gen.count}x(batch)"))
    if len(result) > 6 and gen.random.random() < 0.05:
        start = gen.random.randrange(len(result) - 3)
        gen.count += 1
        result[start : start + 3] = [
            Stmt(gen.count, f"with self.wrap{gen.count}x():", result[start : start + 3])
        ]
    return result


def synthesize(scale: float, seed: int = 7) -> Synthetic:
    gen = Generator(seed)
    copied = max(1, round(8 * scale))
    blocks_wanted = round(200 * scale)
    methods = [(f"copied_{i}", gen.method(170)) for i in range(copied)]
    target_lines = 20_000 * scale
    other = 0
    while sum(2 + _size(b) for _, b in methods) < target_lines:
        methods.append((f"other_{other}", gen.method(60)))
        other += 1
    blocks: dict[int, list[str]] = {}
    candidates = [s for _, body in methods[:copied] for s in _walk(body)]
    for k, stmt in enumerate(gen.random.sample(candidates, blocks_wanted)):
        lines = [MARK, f"self.omni_block{k}(batch)"]
        if k % 3 == 0:
            lines += [f"if self.omni_flag{k}:", f"    self.omni_extra{k}(batch)"]
        blocks[stmt.id] = [*lines, MARK]
    upstream_header = ["class NPUModelRunner:", "    pass"]
    base = _module(upstream_header, methods, {})
    omni_header = [
        "from fakeacc.runner_v1 import NPUModelRunner",
        "",
        "",
        "class OmniRunner(NPUModelRunner):",
        "    pass",
    ]
    omni = _module(omni_header, methods[:copied], blocks)
    v2 = _module(upstream_header, [(name, _edit(gen, body, 30)) for name, body in methods], {})
    return Synthetic(base, omni, v2, base.count("\n"), len(blocks))


def _median(runs: int, stage: Callable[[], R]) -> tuple[float, R]:
    times = []
    result: R | None = None
    for _ in range(runs):
        start = time.perf_counter()
        result = stage()
        times.append(time.perf_counter() - start)
    assert result is not None
    return statistics.median(times), result


@dataclass
class Figures:
    lines: int
    blocks: int
    parse: float
    extract: float
    sync: float
    placed: int
    conflicts: int


def _stages(
    data: Synthetic,
) -> tuple[Callable[[], ModulePatches], Callable[[ModulePatches], SyncResult]]:
    """extract (the omni module parsed inside) and sync, on upstream trees parsed once."""
    base = api.parse_upstream(data.base, "base.py")
    upstream = api.parse_upstream(data.v2, "v2.py", "fakeacc.runner_v1")

    def run_extract() -> ModulePatches:
        return api.extract_text(data.omni, "omni.py", base).module

    def run_sync(module: ModulePatches) -> SyncResult:
        command = "python bench/scale.py"
        return api.sync_patches(PatchSet((module,)), upstream, command, tool="bench").result

    return run_extract, run_sync


def measure(scale: float, runs: int) -> Figures:
    data = synthesize(scale)
    run_extract, run_sync = _stages(data)
    parse_time, _ = _median(runs, lambda: parse(data.v2, "v2.py"))
    extract_time, module = _median(runs, run_extract)
    sync_time, result = _median(runs, lambda: run_sync(module))
    placed = sum(1 for p in result.placements if p.marked and p.status is Status.PLACED)
    conflicts = sum(1 for p in result.placements if p.marked and p.status is Status.CONFLICT)
    assert placed + conflicts == data.blocks, "a block went missing"
    return Figures(data.lines, data.blocks, parse_time, extract_time, sync_time, placed, conflicts)


def peak_memory(scale: float) -> tuple[float, float, float]:
    """Peak Python allocations (MiB) of parsing the upstream, of extract and of sync."""
    data = synthesize(scale)
    tracemalloc.start()
    parse(data.v2, "v2.py")
    parse_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    run_extract, run_sync = _stages(data)
    tracemalloc.start()
    module = run_extract()
    extract_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    run_sync(module)
    sync_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return parse_peak / 2**20, extract_peak / 2**20, sync_peak / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per stage (median)")
    parser.add_argument("--scales", default="0.25,0.5,1", help="sizes relative to 20,000 lines")
    args = parser.parse_args(argv)
    scales = [float(s) for s in args.scales.split(",")]
    rows = [measure(scale, args.runs) for scale in scales]
    columns = ("lines", "blocks", "parse", "extract", "sync", "placed", "conflict")
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, (7, 6, 9, 8, 8, 6, 8), strict=True)))
    for r in rows:
        print(
            f"{r.lines:>7} {r.blocks:>6} {r.parse:>8.2f}s {r.extract:>7.2f}s {r.sync:>7.2f}s "
            f"{r.placed:>6} {r.conflicts:>8}"
        )
    for before, after in itertools.pairwise(rows):
        growth = after.lines / before.lines
        print(
            f"x{growth:.1f} lines: extract x{after.extract / before.extract:.2f}, "
            f"sync x{after.sync / before.sync:.2f} "
            f"(linear x{growth:.1f}, quadratic x{growth**2:.1f})"
        )
    parse_mib, extract_mib, sync_mib = peak_memory(scales[-1])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"peak Python memory at {rows[-1].lines} lines: parse {parse_mib:.0f} MiB, "
        f"extract {extract_mib:.0f} MiB, sync {sync_mib:.0f} MiB"
    )
    print(f"peak RSS of the whole run: {rss:.0f} MiB")
    print("parse: one upstream module; extract: parse of the omni module and extraction;")
    print("sync: splicing, imports and the compile check (upstream trees parsed beforehand)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
