"""The one exception hierarchy: bad input that stops a command with exit code 2."""

from __future__ import annotations

from collections.abc import Iterable

from omni_port.model import Code, Finding


class OmniPortError(Exception):
    """Base of every error omni-port raises on purpose."""


class BadInput(OmniPortError):
    """Input that cannot be processed; carries one or more located diagnostics.

    ``path`` and ``line`` are those of the first diagnostic.
    """

    def __init__(self, findings: Iterable[Finding]) -> None:
        self.findings = tuple(findings)
        if not self.findings:
            raise ValueError("BadInput needs at least one finding")
        first = self.findings[0]
        self.path = first.path
        self.line = first.line
        super().__init__("\n".join(str(f) for f in self.findings))

    @classmethod
    def at(cls, code: Code, path: str, line: int, message: str, col: int = 1) -> BadInput:
        """Build an error with a single diagnostic."""
        return cls([Finding(code, path, line, message, col)])
