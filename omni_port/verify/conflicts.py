"""Conflicts left in generated modules: a block sync could not place, commented out in place,
or (V2) a method both runner families override that no rule composes, under its region.

A runner with such a region runs without that block, so every gate (``verify``, ``check``,
the runtime switch) refuses it until the conflict is resolved. The regions are read from
the text itself, so a lock file that says otherwise cannot hide one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from omni_port.model import Code, Finding
from omni_port.sync.splice import CONFLICT_OPEN

#: What a V2 composition conflict's region says after its id (``v2.compose``).
NOT_COMPOSED = "(V2: not composed)"


def conflict_findings(modules: Mapping[str, str]) -> list[Finding]:
    """One OP310 per conflict region, at its opening line, for every module (name -> text)."""
    return [
        finding for name in sorted(modules) for finding in _module_conflicts(name, modules[name])
    ]


def _module_conflicts(name: str, text: str) -> Iterator[Finding]:
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.lstrip()
        if not stripped.startswith(CONFLICT_OPEN):
            continue
        what = stripped[len(CONFLICT_OPEN) :].strip()
        piece = what.split(" ", 1)[0].rstrip(":")
        message = (
            f"unresolved conflict: {piece} is commented out here, so this runner is not "
            f"deployable; `omni-port resolve {piece} --at '#K'` records one of the candidates "
            "listed below"
        )
        if NOT_COMPOSED in what:
            message = (
                f"unresolved conflict: {piece} is omni's method alone, its NPU override never "
                "runs, so this runner is not deployable; compose the two by hand, or list the "
                "method in the --v2-allow file when dropping the NPU override is intended"
            )
        yield Finding(Code.OP310, name, number, message, col=len(line) - len(stripped) + 1)
