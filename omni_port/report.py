"""Render findings and block reports as text, JSON or GitHub workflow annotations."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from omni_port.model import (
    Candidate,
    Code,
    Finding,
    Placement,
    Severity,
)


def display_path(path: str) -> str:
    """A path relative to the working directory when it lies below it."""
    if not path or not os.path.isabs(path):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def shorten(text: str, limit: int = 80) -> str:
    """``text`` on one line (runs of blanks become one space), cut to ``limit`` characters
    with "..." at the end: code quoted in a message, a title, a candidate."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def candidate_place(line: int, span: int) -> str:
    """Where a candidate puts a block, told apart from another at the same line:
    ``line 2872`` (inserted before it) or ``line 2872, replacing 2 statements``."""
    if not span:
        return f"line {line}"
    return f"line {line}, replacing {span} statement{'s' if span > 1 else ''}"


def shown(path: Path) -> str:
    """A path as the user should see it: relative to the working directory when below it."""
    return display_path(str(path.resolve())) if path.is_absolute() else str(path)


def text_line(finding: Finding) -> str:
    """``path:line:col: CODE message``."""
    where = f"{display_path(finding.path)}:{finding.line}:{finding.col}"
    return f"{where}: {finding.code.value} {finding.message}"


def github_line(finding: Finding) -> str:
    """A GitHub Actions workflow command that annotates the line; its values are escaped
    as the runner reads them (a ``,`` or ``:`` in a path would otherwise end the value)."""
    level = "error" if finding.severity.value == "error" else "notice"
    properties = {
        "file": display_path(finding.path),
        "line": str(max(finding.line, 1)),
        "col": str(max(finding.col, 1)),
        "title": f"{finding.code.value} {finding.kind}",
    }
    listed = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    return f"::{level} {listed}::{_escape_data(finding.message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_findings(findings: Iterable[Finding], fmt: str, details: bool = True) -> str:
    """Findings in ``text``, ``github`` or ``json`` form (json: one object per line).

    In text form an error's detail (a diff, the code concerned) follows it, indented.
    """
    if fmt == "github":
        lines = [github_line(f) for f in findings]
    elif fmt == "json":
        lines = [json.dumps(finding_dict(f), sort_keys=True) for f in findings]
    else:
        # A note's detail (the code of an implicit edit) is in the JSON report only.
        lines = [
            text_line(f) + (_indented(f.detail) if details and f.severity is Severity.ERROR else "")
            for f in findings
        ]
    return "".join(line + "\n" for line in lines)


#: Lines of a finding's detail shown in text output (JSON carries all of it).
DETAIL_LINES = 40


def _indented(detail: str) -> str:
    lines = detail.splitlines()
    shown = lines[:DETAIL_LINES]
    if len(lines) > len(shown):
        shown.append(f"... {len(lines) - len(shown)} more lines (see --json)")
    return "".join("\n    " + line for line in shown)


def finding_dict(finding: Finding) -> dict[str, object]:
    return {
        "kind": finding.kind,
        "code": finding.code.value,
        "path": display_path(finding.path),
        "line": finding.line,
        "col": finding.col,
        "message": finding.message,
        "severity": finding.severity.value,
        "detail": finding.detail,
    }


def finding_from_dict(row: dict[str, object]) -> Finding:
    """The inverse of ``finding_dict`` (paths stay as displayed)."""
    return Finding(
        code=Code[str(row["code"])],
        path=str(row["path"]),
        line=int(str(row["line"])),
        message=str(row["message"]),
        col=int(str(row.get("col", 1))),
        severity=Severity(str(row.get("severity", "error"))),
        detail=str(row.get("detail", "")),
    )


def placement_dict(placement: Placement) -> dict[str, object]:
    return {
        "id": placement.block_id,
        "kind": placement.kind,
        "marked": placement.marked,
        "module": placement.module,
        "class": placement.owner,
        "method": placement.member,
        "status": placement.status.value,
        "confidence": round(placement.confidence, 3),
        "lines": [placement.start, placement.end],
        "candidates": [_candidate_dict(c) for c in placement.candidates],
        "reason": placement.reason,
        "decided_by": [rule.value for rule in placement.decided_by],
        "release": placement.release,
    }


def _candidate_dict(candidate: Candidate) -> dict[str, object]:
    return {
        "line": candidate.line,
        "score": round(candidate.score, 3),
        "text": candidate.text,
        "path": list(candidate.path),
        "span": candidate.span,
    }


def json_report(
    placements: Sequence[Placement],
    findings: Sequence[Finding],
    counts: dict[str, int],
) -> str:
    """The ``--json`` document: one object with ``blocks``, ``findings`` and ``counts``."""
    document = {
        "blocks": [placement_dict(p) for p in placements],
        "findings": [finding_dict(f) for f in findings],
        "counts": counts,
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def in_directory(
    findings: Iterable[Finding], directory: Path, names: Collection[str]
) -> tuple[Finding, ...]:
    """Findings about output files (named by file name) as paths in ``directory``, so that
    an editor or a GitHub annotation can open them."""
    root = shown(directory)
    return tuple(replace(f, path=f"{root}/{f.path}") if f.path in names else f for f in findings)


def tally(findings: Sequence[Finding]) -> str:
    """Problems and notes by kind: ``2 problems (2 undefined-name); 4 notes (4 unverified)``."""
    parts = []
    for severity, word in ((Severity.ERROR, "problem"), (Severity.NOTE, "note")):
        counts = finding_counts(f for f in findings if f.severity is severity)
        total = sum(counts.values())
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        parts.append(f"{total} {word}s ({kinds})" if total else f"no {word}s")
    return "; ".join(parts)


def finding_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings by kind, for summaries."""
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.kind] = counts.get(finding.kind, 0) + 1
    return counts
