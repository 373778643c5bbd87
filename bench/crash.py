"""A killed upgrade never leaves a mixed workspace: SIGKILL at random points of the next
real upgrade (README, "Upgrade day"), then the next command, then what the workspace holds.

Each run copies one workspace (this repository's configuration and marker list, after a
`make sync` of the default inputs) and starts the upgrade in it. Half the runs kill it
after a random share of an uninterrupted run's time (most land while it computes, before
it writes); half kill it at a random one of the write steps in the workspace (a file
staged, the journal, a rename), where a crash can hurt. The next command (`extract
--check`) must leave the workspace exactly as it was before the upgrade or exactly as an
uninterrupted upgrade leaves it, with no temporary file; it says which it did.

    python bench/crash.py --runs 20

prints one line per run and the counts: before / after / mixed, and what the next command
said (rolled back, completed, nothing to do).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cold import UPGRADE

ROOT = Path(__file__).resolve().parent.parent
OMNI_PORT = [sys.executable, "-m", "omni_port", "-q"]
#: SIGKILL at the K-th write step in the workspace: a file synced or renamed into place,
#: the journal's own included, the cache's not counted (tests/test_workspace.py uses it on
#: the synthetic upgrade).
KILLED_AT = """
import os, signal, sys
from omni_port import cli

steps, at = [0], int(sys.argv.pop(1))
cache = os.environ.get("OMNI_PORT_CACHE", os.path.expanduser("~/.cache/omni-port"))
real_fsync, real_replace = os.fsync, os.replace

def step(path):
    if not str(path).startswith(cache):
        steps[0] += 1
        if steps[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

def fsync(fd):
    step(os.readlink(f"/proc/self/fd/{fd}"))
    real_fsync(fd)

def replace(src, dst):
    step(os.path.abspath(dst))
    real_replace(src, dst)

os.fsync, os.replace = fsync, replace
sys.argv = ["omni-port", *sys.argv[1:]]
cli.run()
"""
STATE = ".omni-port"


def tree(root: Path) -> dict[str, bytes]:
    """Every file of a workspace but the tool's own state (its lock, a journal)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and STATE not in p.relative_to(root).parts
    }


def workspace(into: Path) -> Path:
    """This repository's configuration and marker list after `make sync`'s extract and
    sync of the default inputs, in ``into``."""
    into.mkdir()
    for name in ("pyproject.toml", "marker-allow.txt"):
        shutil.copy(ROOT / name, into / name)
    for command in (["extract"], ["sync"]):
        done = subprocess.run([*OMNI_PORT, *command], cwd=into, capture_output=True)
        assert done.returncode in (0, 1), done.stderr.decode()
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    chooser = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="omni-port-crash-") as scratch:
        base = workspace(Path(scratch) / "before")
        before = tree(base)
        done = Path(scratch) / "after"
        shutil.copytree(base, done)
        started = time.monotonic()
        finished = subprocess.run([*OMNI_PORT, *UPGRADE], cwd=done, capture_output=True)
        took = time.monotonic() - started
        assert finished.returncode in (0, 1), finished.stderr.decode()
        after = tree(done)
        steps = _steps(base, Path(scratch))
        print(f"uninterrupted upgrade: {took:.1f} s, {steps} write steps in the workspace")
        counts: dict[str, int] = {}
        for run in range(args.runs):
            work = Path(scratch) / f"run-{run}"
            shutil.copytree(base, work)
            how = _kill(work, chooser, steps) if run % 2 else _kill_late(work, chooser, took)
            said = subprocess.run(
                [*OMNI_PORT, "extract", "--check"], cwd=work, capture_output=True, text=True
            ).stderr
            state = tree(work)
            found = "before" if state == before else "after" if state == after else "MIXED"
            temps = len(list(work.rglob("*.tmp")))
            told = (
                "completed"
                if "completed the interrupted" in said
                else "rolled back"
                if "rolled back the interrupted" in said
                else "nothing to do"
            )
            key = f"{found}, {told}" + (f", {temps} temp files left" if temps else "")
            counts[key] = counts.get(key, 0) + 1
            print(f"run {run + 1:2}: {how}: the next command found it {key}")
            shutil.rmtree(work)
        print("counts: " + "; ".join(f"{n} {key}" for key, n in sorted(counts.items())))


def _steps(base: Path, scratch: Path) -> int:
    """How many write steps an uninterrupted upgrade makes in the workspace: the counter,
    printing its count at exit instead of killing."""
    probe = scratch / "probe"
    shutil.copytree(base, probe)
    counting = KILLED_AT.replace("os.kill(os.getpid(), signal.SIGKILL)", "pass").replace(
        "cli.run()", "import atexit\natexit.register(lambda: print(steps[0]))\ncli.run()"
    )
    out = subprocess.run(
        [sys.executable, "-c", counting, "0", "-q", *UPGRADE],
        cwd=probe,
        capture_output=True,
        text=True,
    ).stdout
    shutil.rmtree(probe)
    return int(out.strip().splitlines()[-1])


def _kill(work: Path, chooser: random.Random, steps: int) -> str:
    """Kill the upgrade at a random write step."""
    at = chooser.randint(1, steps)
    subprocess.run(
        [sys.executable, "-c", KILLED_AT, str(at), "-q", *UPGRADE], cwd=work, capture_output=True
    )
    return f"killed at write step {at}/{steps}"


def _kill_late(work: Path, chooser: random.Random, took: float) -> str:
    """Kill the upgrade after a random share of an uninterrupted run's time."""
    delay = chooser.uniform(0.05, 1.05) * took
    process = subprocess.Popen([*OMNI_PORT, *UPGRADE], cwd=work, stderr=subprocess.DEVNULL)
    try:
        process.wait(timeout=delay)
        return f"ended before the kill at {delay:.1f} s"
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return f"killed after {delay:.1f} s"


if __name__ == "__main__":
    main()
