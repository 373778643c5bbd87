"""Check 8: a row that says "placed" points at lines of the output (OP513).

A placed block holds lines of its own code; an edit upstream made too (convergent) names
the lines of upstream's statements that stand for it. A placed row with no lines would
say the runner has the block when nothing of it is there: sync never writes one (a block
whose standing statements another block replaces is a conflict), and this is the net.
Deletions hold no lines by nature and are not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from omni_port.model import BlockKind, Code, Finding, Placement, Status


def row_findings(placements: Sequence[Placement], modules: frozenset[str]) -> Iterator[Finding]:
    """OP513 for each placed row of ``modules`` (file names) that names no output line."""
    for row in placements:
        if row.module not in modules or row.status is not Status.PLACED:
            continue
        if not isinstance(row.kind, BlockKind) or row.kind is BlockKind.DELETION:
            continue
        if row.start >= 1 and row.end >= row.start:
            continue
        message = (
            f"{row.block_id} is reported placed, but no line of the output holds its code or "
            "the upstream statements that stand for it (a lock written before rows named "
            "them: run `omni-port sync`)"
        )
        yield Finding(Code.OP513, row.module, 1, message)
