"""What commands print: findings and the JSON report.

stdout carries one payload: the findings, or else a diff (``--diff``) or the JSON report
(``--json -``), in which case the findings go to stderr so the payload stays parseable.
"""

from __future__ import annotations

from pathlib import Path

import click

from omni_port import report
from omni_port.model import Report
from omni_port.sources.textio import write_atomic


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
    text = report.format_findings(result.findings, fmt)
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
