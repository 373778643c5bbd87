"""How a command's flags say to write its outputs (``api.writing`` stages them), and the
diff it prints of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import click

from omni_port.api.model import Finding
from omni_port.api.patches import Changes
from omni_port.api.writing import write_tree


@dataclass(frozen=True, slots=True)
class Writing:
    """How a command writes an output tree, as its flags say."""

    #: Write nothing; report what would change (--check).
    check: bool = False
    #: Print the unified diff of what changes (--diff).
    diff: bool = False
    #: Overwrite files edited by hand since sync wrote them (--discard-edits).
    discard_edits: bool = False


def write_files(
    root: Path,
    files: Mapping[str, bytes],
    stale: Iterable[str],
    check: bool = False,
    diff: bool = False,
) -> tuple[Changes, list[Finding]]:
    """Stage a tree of outputs in the command's transaction, or with ``check`` only
    compare it (``api.writing.write_tree``).

    Returns what changes and, under ``check``, one OP304 finding per file that would
    change. ``diff`` prints the unified diff on stdout.
    """
    written = write_tree(root, files, stale, check, diff)
    if diff:
        click.echo(written.diff, nl=False)
    return written.changes, written.findings
