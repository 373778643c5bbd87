"""Checks 1 and 2: each module compiles; pyflakes' undefined, duplicate and orphaned names."""

from __future__ import annotations

from collections.abc import Iterator

from omni_port.model import Code, Finding
from omni_port.pyast.names import issues


def compile_findings(name: str, text: str) -> list[Finding]:
    try:
        compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = f"does not compile: {exc.msg}"
        return [Finding("syntax", Code.OP501, name, exc.lineno or 1, message, exc.offset or 1)]
    except ValueError as exc:  # null bytes
        return [Finding("syntax", Code.OP501, name, 1, f"does not compile: {exc}")]
    return []


def name_findings(
    name: str, text: str, allowed: frozenset[str], covered: frozenset[tuple[str, int]]
) -> Iterator[Finding]:
    """pyflakes' findings, minus undefined names a block-binding finding already explains."""
    for issue in issues(text, name):
        if issue.kind == "undefined" and (issue.name, issue.line) not in covered:
            message = f"undefined name `{issue.name}`"
            yield Finding("undefined-name", Code.OP502, name, issue.line, message, issue.col)
        elif issue.kind == "redefinition":
            yield Finding("redefinition", Code.OP503, name, issue.line, issue.message, issue.col)
        elif issue.kind == "unused-import" and issue.name not in allowed:
            message = f"`{issue.name}` is imported but unused after splicing"
            yield Finding("unused-import", Code.OP504, name, issue.line, message, issue.col)
