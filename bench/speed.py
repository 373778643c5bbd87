"""Speed against the parsing floor: a full sync of the default inputs versus libcst alone.

The floor is what any libcst-based tool pays at least: ``libcst.parse_module`` over the
upstream module and the three runner modules the patches carry. Both are measured in
this one process, interleaved, and reported as medians and their ratio. The fast path of
``check`` (inputs unchanged) is timed as a whole command, process start included.

Run ``python bench/speed.py`` (``make bench`` runs it after the replay).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import libcst

from omni_port.cli import main
from omni_port.sources.config import Config, load
from omni_port.sources.upstream import (
    ASCEND_RUNNER,
    default_cache,
    locate,
    locate_runners,
    parse_spec,
)

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str]) -> None:
    """One command in this process; its findings (payload on stdout) are not the point here."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        try:
            main(["-q", *args], standalone_mode=False)
        except SystemExit as exc:
            if exc.code not in (0, 1, None):
                raise


def _timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - started


def main_bench(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=5, help="interleaved rounds (median reported)"
    )
    args = parser.parse_args(argv)
    config = load(ROOT / "pyproject.toml")
    cache = default_cache()
    upstream = locate(parse_spec(config.upstream, "vllm-ascend"), ASCEND_RUNNER, cache).source
    runners = [r.source for r in locate_runners(config.source, cache)]
    texts = [upstream.text, *(r.text for r in runners)]
    lines = sum(text.count("\n") for text in texts)

    with tempfile.TemporaryDirectory(prefix="omni-port-speed-") as tmp:
        work = Path(tmp)
        patches, out = work / "patches", work / "generated"
        _run(["extract", config.source, "--base", config.base, "--patches", str(patches)])
        sync_args = ["sync", "--patches", str(patches), "--upstream", config.upstream]
        syncs, floors = [], []
        for round_ in range(args.repeat):
            target = out / str(round_)
            syncs.append(_timed(lambda t=target: _run([*sync_args, "--out", str(t)])))
            floors.append(_timed(lambda: [libcst.parse_module(text) for text in texts]))
        check = _check_times(work, patches, out / "0", config, args.repeat)

    sync_median, floor_median = statistics.median(syncs), statistics.median(floors)
    print(f"# Speed ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {args.repeat} rounds)\n")
    print(f"inputs: {config.upstream} + patches of {config.source} ({lines} lines of Python)\n")
    print("| measure | median | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| libcst.parse_module of the inputs (floor) | {floor_median:.3f} s | 1.00 |")
    print(f"| full `omni-port sync` | {sync_median:.3f} s | {sync_median / floor_median:.2f} |")
    check_median = statistics.median(check)
    print(f"| `omni-port check` on unchanged inputs (whole command) | {check_median:.3f} s | |")
    return 0


def _check_times(
    work: Path, patches: Path, generated: Path, config: Config, repeat: int
) -> list[float]:
    """Wall time of the check command in a fresh process once its cache is warm."""
    command = [
        sys.executable, "-m", "omni_port", "-q", "check", config.source,
        "--patches", str(patches), "--generated", str(generated),
    ]  # fmt: skip
    subprocess.run(command, cwd=work, capture_output=True, check=False)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, cwd=work, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return times


if __name__ == "__main__":
    raise SystemExit(main_bench())
