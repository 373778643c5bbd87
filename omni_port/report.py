"""Render findings and block reports as text, JSON or GitHub workflow annotations."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence

from omni_port.model import (
    Block,
    Candidate,
    Chunk,
    Code,
    Finding,
    ModulePatches,
    PatchSet,
    Placement,
    Severity,
    Status,
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


def text_line(finding: Finding) -> str:
    """``path:line:col: CODE message``."""
    where = f"{display_path(finding.path)}:{finding.line}:{finding.col}"
    return f"{where}: {finding.code.value} {finding.message}"


def github_line(finding: Finding) -> str:
    """A GitHub Actions workflow command that annotates the line."""
    level = "error" if finding.severity.value == "error" else "notice"
    message = finding.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return (
        f"::{level} file={display_path(finding.path)},line={max(finding.line, 1)},"
        f"col={finding.col},title={finding.code.value} {finding.kind}::{message}"
    )


def format_findings(findings: Iterable[Finding], fmt: str, details: bool = True) -> str:
    """Findings in ``text``, ``github`` or ``json`` form (json: one object per line).

    In text form a finding's detail (a diff, the code concerned) follows it, indented.
    """
    if fmt == "github":
        lines = [github_line(f) for f in findings]
    elif fmt == "json":
        lines = [json.dumps(finding_dict(f), sort_keys=True) for f in findings]
    else:
        lines = [text_line(f) + (_indented(f.detail) if details else "") for f in findings]
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
        kind=str(row["kind"]),
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


def extracted_blocks(patches: PatchSet) -> list[Placement]:
    """Every block of a patch set as an ``extracted`` report row, in module order."""
    return [row for module in patches.modules for row in _module_rows(module)]


def _module_rows(module: ModulePatches) -> Iterator[Placement]:
    for piece in module.pieces:
        if isinstance(piece, Block):
            yield _row(
                module,
                piece.id,
                piece.kind.value,
                piece.marked,
                piece.owner,
                piece.member,
                piece.origin.start,
                piece.origin.end,
            )
        elif isinstance(piece, Chunk) and piece.marked:
            kind = "class-level" if piece.owner else "module-level"
            yield _row(
                module,
                piece.id,
                kind,
                True,
                piece.owner,
                piece.name,
                piece.origin.start,
                piece.origin.end,
            )
        elif isinstance(piece, Chunk):
            yield from _contained_rows(module, piece)


def _contained_rows(module: ModulePatches, chunk: Chunk) -> Iterator[Placement]:
    """Marked regions inside omni-owned code (carried with it, listed for the catalog)."""
    if "omni" not in chunk.code.lower():
        return
    from omni_port.extract.markers import scan  # parsing is for extract reports only
    from omni_port.pyast.syntax import dedent_code, parse

    tree = parse(dedent_code(chunk.code), chunk.origin.path)
    offset = chunk.origin.start - 1
    for number, region in enumerate(scan(tree).regions, start=1):
        yield _row(
            module,
            f"{chunk.id}#{number}",
            "contained",
            True,
            chunk.owner,
            chunk.name,
            region.opener.line + offset,
            region.closer.line + offset,
        )


def _row(
    module: ModulePatches,
    ident: str,
    kind: str,
    marked: bool,
    owner: str,
    member: str,
    start: int,
    end: int,
) -> Placement:
    return Placement(
        ident, module.name, owner, member, kind, marked, Status.EXTRACTED, 1.0, start, end
    )
