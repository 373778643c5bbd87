"""``api.report``: findings and reports as text, JSON and GitHub annotations, and their
counts (``omni_port.report``, named here for the API's callers)."""

from __future__ import annotations

from omni_port.report import (
    candidate_place,
    display_path,
    finding_counts,
    format_findings,
    in_directory,
    json_report,
    shorten,
    shown,
    tally,
    text_line,
)

__all__ = [
    "candidate_place",
    "display_path",
    "finding_counts",
    "format_findings",
    "in_directory",
    "json_report",
    "shorten",
    "shown",
    "tally",
    "text_line",
]
