"""What commands print: findings and the JSON report.

stdout carries one payload: the findings, or else a diff (``--diff``) or the JSON report
(``--json -``), in which case the findings go to stderr so the payload stays parseable.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import click

from omni_port.api import report
from omni_port.api.files import cached_member, write_atomic
from omni_port.api.model import Finding, Report
from omni_port.cli.options import Options


def emit(
    result: Report,
    json_path: Path | None,
    fmt: str = "text",
    diff: bool = False,
    document: str | None = None,
) -> None:
    """Print the findings and write the JSON report (``document``, else the standard one
    of ``result``); one payload on stdout (see above). ``diff``: stdout carries another
    payload already (a diff, a summary), so the findings go to stderr."""
    shown = result.findings if fmt == "json" else openable(result.findings)
    text = report.format_findings(shown, fmt)
    if text:
        payload_elsewhere = diff or (json_path is not None and str(json_path) == "-")
        click.echo(text, nl=False, err=payload_elsewhere)
    if json_path is None:
        return
    if document is None:
        document = report.json_report(result.placements, result.findings, dict(result.counts))
    if str(json_path) == "-":
        click.echo(document, nl=False)
    else:
        write_atomic(json_path, document.encode("utf-8"))


def openable(findings: Sequence[Finding]) -> list[Finding]:
    """Findings a person reads (text, GitHub annotations) name files they can open: a
    release's file is shown as its copy in the cache. JSON keeps the release's name,
    the same on every machine."""
    context = click.get_current_context(silent=True)
    options = context.find_object(Options) if context is not None else None
    if options is None:
        return list(findings)
    return [replace(f, path=cached_member(f.path, options.cache)) for f in findings]


class Meter:
    """How far a download has come, on stderr, as pip shows it: only once a transfer has
    taken a second (most take less), redrawn in place at most ten times a second, its
    last state left on a line of its own. Installed only when stderr is a terminal and
    the run is not quiet."""

    #: Seconds a transfer runs before it is shown.
    AFTER = 1.0
    #: Seconds between two redraws.
    EVERY = 0.1

    def __init__(self) -> None:
        self._started: dict[str, float] = {}
        self._drawn = 0.0
        self._width = 0

    def __call__(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        started = self._started.setdefault(what, now)
        ended = bool(total) and done >= total
        if ended:
            del self._started[what]
        if now - started < self.AFTER or (not ended and now - self._drawn < self.EVERY):
            return
        self._drawn = now
        line = f"omni-port: {what}: {_megabytes(done)}"
        line += f" of {_megabytes(total)}" if total else ""
        click.echo("\r" + line.ljust(self._width), err=True, nl=ended)
        self._width = 0 if ended else len(line)


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"
