"""Speed against the parsing floor: a full sync of the default inputs versus one libcst parse.

Every figure is a whole process, start-up included, so it is what a user waits for:

- the floor: ``python -c "import libcst; libcst.parse_module(<upstream>)"`` on the default
  upstream module, what any libcst-based tool pays at least;
- a full ``omni-port sync`` of the default patches onto that upstream, with the parsed
  upstream in the cache (warm) and with it removed before each run (cold);
- the same warm sync with the upstream given as a file path (its tree is kept by content
  hash like a release's);
- ``omni-port check`` on unchanged inputs (its answer cached).

``--cold`` measures a first run instead, with an empty cache for every run (the virtual
environment built): the commands of ``make sync`` in a copy of this repository's workspace,
and the next real upgrade (``upgrade vllm-omni==0.32.0rc1 --base detect --to
vllm-ascend==0.30.0rc2``) in an empty folder holding a copy of its pyproject.toml; with the
bytes each downloaded (counted by a tunnelling proxy on 127.0.0.1 that the runs are pointed
at with ``HTTPS_PROXY``) and the size of the cache each left.

The runs are interleaved and repeated (8 rounds by default); the machine is noisy, so the
table gives minimums and medians and the ratio of minimums. The package's bytecode is
compiled first, as an installed tool's is: where ``PYTHONDONTWRITEBYTECODE`` is set, a
module edited since its last compile would otherwise be compiled again in every run.
Run ``python bench/speed.py`` (``make bench`` runs it after the replay).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omni_port import api
from omni_port.sources.config import load
from omni_port.sources.upstream import ASCEND_RUNNER, default_cache, locate, parse_spec

ROOT = Path(__file__).resolve().parent.parent
OMNI_PORT = [sys.executable, "-m", "omni_port", "-q"]


def _timed(command: list[str], cwd: Path, before: Callable[[], None] | None = None) -> float:
    if before is not None:
        before()
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="interleaved rounds")
    parser.add_argument("--cold", action="store_true", help="first runs on an empty cache")
    args = parser.parse_args(argv)
    if args.cold:
        from bench import cold

        return cold.main(args.rounds)
    compileall.compile_dir(ROOT / "omni_port", quiet=1)
    config = load(ROOT / "pyproject.toml")
    cache = default_cache()
    upstream = locate(parse_spec(config.upstream, "vllm-ascend"), ASCEND_RUNNER, cache).source
    settings = api.Settings(config, cache)
    with tempfile.TemporaryDirectory(prefix="omni-port-speed-") as tmp:
        work = Path(tmp)
        upstream_file = work / "model_runner_v1.py"
        upstream_file.write_text(upstream.text, encoding="utf-8")
        patches, out = work / "patches", work / "generated"
        common = ["--cache-dir", str(cache)]
        located = api.load_runners([config.source], settings)
        subprocess.run(
            [
                *OMNI_PORT,
                *common,
                "extract",
                config.source,
                "--base",
                config.base,
                "--patches",
                str(patches),
                # The default source has a marker whose partner was lost (`marker-allow` lists it).
                *(["--lenient"] if config.marker_allow else []),
            ],
            cwd=work,
            capture_output=True,
            check=False,
        )
        sync = [
            *OMNI_PORT,
            *common,
            "sync",
            "--patches",
            str(patches),
            "--upstream",
            config.upstream,
            "--generated",
            str(out),
        ]
        # Its own output folder: a header naming another upstream would rewrite `out`.
        path_out = str(work / "generated-path")
        sync_path = [*sync[:-4], "--upstream", str(upstream_file), "--generated", path_out]
        check = [
            *OMNI_PORT,
            *common,
            "check",
            config.source,
            "--patches",
            str(patches),
            "--generated",
            str(out),
        ]
        floor = [
            sys.executable,
            "-c",
            "import libcst, sys; libcst.parse_module(open(sys.argv[1]).read())",
            str(upstream_file),
        ]
        for warm_up in (sync, check, sync_path):
            subprocess.run(warm_up, cwd=work, capture_output=True, check=False)
        trees = cache / "trees"
        figures: dict[str, list[float]] = {
            "floor": [],
            "cold": [],
            "warm": [],
            "path": [],
            "check": [],
        }
        for _ in range(args.rounds):
            figures["floor"].append(_timed(floor, work))
            figures["warm"].append(_timed(sync, work))
            figures["cold"].append(
                _timed(sync, work, lambda: shutil.rmtree(trees, ignore_errors=True))
            )
            figures["check"].append(_timed(check, work))
            figures["path"].append(_timed(sync_path, work))
        subprocess.run(sync, cwd=work, capture_output=True, check=False)  # leave it warm
    lines = sum(s.source.text.count("\n") for s in located) + upstream.text.count("\n")
    _print(figures, config.upstream, config.source, lines, args.rounds)
    return 0


def _print(
    figures: dict[str, list[float]], upstream: str, source: str, lines: int, rounds: int
) -> None:
    floor = min(figures["floor"])
    print(f"# Speed ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {rounds} rounds)\n")
    print(f"inputs: {upstream} + patches of {source} ({lines} lines of Python)\n")
    print("| measure (whole process) | min | median | ratio of minimums |")
    print("| --- | ---: | ---: | ---: |")
    rows = (
        ("floor", "one `libcst.parse_module` of the upstream"),
        ("warm", "full `omni-port sync`, parsed upstream cached"),
        ("cold", "full `omni-port sync`, nothing parsed before"),
        ("path", "full `omni-port sync`, the upstream as a file path, warm"),
        ("check", "`omni-port check`, inputs unchanged"),
    )
    for key, label in rows:
        times = figures[key]
        ratio = f"{min(times) / floor:.2f}" if key != "check" else ""
        print(f"| {label} | {min(times):.3f} s | {statistics.median(times):.3f} s | {ratio} |")


if __name__ == "__main__":
    raise SystemExit(main())
