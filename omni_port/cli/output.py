"""What commands write: file trees (or, with --check, what would change), findings, JSON.

stdout carries one payload: the findings, or else a diff (``--diff``) or the JSON report
(``--json -``), in which case the findings go to stderr so the payload stays parseable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import click

from omni_port import TOOL, report
from omni_port.model import Code, Finding, PatchSet, Report
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import Changes, apply, existing, plan, unified_diff
from omni_port.report import shown
from omni_port.sources.textio import encode, write_atomic


def write_files(
    root: Path,
    files: Mapping[str, bytes],
    stale: Iterable[str],
    check: bool = False,
    diff: bool = False,
) -> tuple[Changes, list[Finding]]:
    """Write a tree of outputs atomically, or with ``check`` only compare it.

    Returns what changed and, under ``check``, one OP304 finding per file that would change.
    ``diff`` prints the unified diff on stdout.
    """
    changes = plan(root, files, stale)
    if diff:
        click.echo(unified_diff(root, files, changes), nl=False)
    if check:
        return changes, would_change(root, changes)
    if not changes.clean:
        apply(root, files, changes)
    return changes, []


def would_change(root: Path, changes: Changes) -> list[Finding]:
    """OP304 for every file a write would rewrite or remove."""
    rows = [(rel, "rewrite") for rel in changes.changed]
    rows += [(rel, "remove") for rel in changes.removed]
    return [
        Finding(Code.OP304, shown(root / rel), 1, f"would {verb} it") for rel, verb in sorted(rows)
    ]


def save_patches(directory: Path, patch_set: PatchSet) -> Changes:
    """Write a patch set back: changed files atomically, files of pieces that are gone removed."""
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    changes, _ = write_files(directory, files, existing(directory, "*/*.patch"))
    return changes


def emit(
    result: Report,
    json_path: Path | None,
    fmt: str = "text",
    diff: bool = False,
    document: str | None = None,
) -> None:
    """Print the findings and write the JSON report (``document``, else the standard one
    of ``result``); one payload on stdout (see above)."""
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
