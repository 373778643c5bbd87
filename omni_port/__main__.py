"""The console script ``omni-port`` (and ``python -m omni_port``): Ctrl-C exits 130 from
the first instant, while the command line is still being imported.

Importing the command line (click, the commands' modules) takes about a tenth of a second;
a Ctrl-C in that time would be a traceback and exit 1, which `make sync` reads as
findings and carries on after. This module imports nothing heavy before it has a handler.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

#: Exit code of a run stopped by Ctrl-C (128 + SIGINT), as the commands exit.
INTERRUPTED = 130


def _interrupted(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("omni-port: interrupted (nothing was half-written)\n")
    raise SystemExit(INTERRUPTED)


def main() -> None:
    """Import the command line under a handler that exits 130, then run it with Python's
    own (the commands turn KeyboardInterrupt into 130 after cleaning up)."""
    previous = signal.signal(signal.SIGINT, _interrupted)
    from omni_port.cli import run

    signal.signal(signal.SIGINT, previous)
    run()


if __name__ == "__main__":
    main()
