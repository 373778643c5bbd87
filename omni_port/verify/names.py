"""Check 2: pyflakes' undefined, duplicate and splice-orphaned names."""

from __future__ import annotations

from collections.abc import Iterator

from omni_port.model import Code, Finding
from omni_port.pyast.names import issues


def name_findings(
    name: str, text: str, allowed: frozenset[str], covered: frozenset[tuple[str, int]]
) -> Iterator[Finding]:
    """pyflakes' findings, minus undefined names a block-binding finding already explains."""
    for issue in issues(text, name):
        if issue.kind == "undefined" and (issue.name, issue.line) not in covered:
            message = f"undefined name `{issue.name}`"
            yield Finding(Code.OP502, name, issue.line, message, issue.col)
        elif issue.kind == "redefinition":
            yield Finding(Code.OP503, name, issue.line, issue.message, issue.col)
        elif issue.kind == "unused-import" and issue.name not in allowed:
            message = f"`{issue.name}` is imported but unused after splicing"
            yield Finding(Code.OP504, name, issue.line, message, issue.col)
