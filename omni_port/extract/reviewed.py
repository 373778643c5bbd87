"""Reviewed marker defects (the ``marker-allow`` list): which malformed markers are accepted.

A release's runners are not the workspace's to fix: vllm-omni 0.30.0's AR runner has a
marker whose partner was lost. A reviewer lists that one defect, its file, line and code,
with the reason; it is then a note. Any other malformed marker stays bad input, so the
next release's new one (or the same one moved) still stops extract until it is reviewed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from omni_port.errors import BadInput
from omni_port.model import Code, Finding, Severity
from omni_port.sources.allowlist import AllowLine, allow_lines

#: Diagnostics of malformed markers.
MARKER_CODES = frozenset({Code.OP101, Code.OP102, Code.OP103, Code.OP104, Code.OP105})
#: What an entry names, before its reason.
FORM = "FILE:LINE: CODE"
#: The list `upgrade --lenient` starts when the configuration names none.
DEFAULT_LIST = "marker-allow.txt"
#: How a list `upgrade --lenient` starts opens: what its lines mean.
HEADER = """\
# Reviewed malformed markers omni-port accepts (`marker-allow` in [tool.omni-port]): one
# a line, FILE:LINE: CODE, two spaces, why it is not ours to fix. FILE is a release's
# runner (vllm-omni==X/vllm_omni/...) or a path from the folder of pyproject.toml. Any
# other malformed marker stops extract, upgrade and check; an entry that matches none
# is reported.
"""

_KEY = re.compile(
    r"""
    ^(?P<file>.+)           # vllm-omni==X/MEMBER, or a path from the repository root
    :(?P<line>[1-9]\d*)     # 1-based line of the marker
    :\ ?(?P<code>OP\d{3})$  # its code
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class MarkerEntry:
    """One accepted marker defect: ``FILE:LINE: CODE  reason``."""

    #: The runner file as entries name it (``Defect.file``).
    file: str
    #: 1-based line of the marker.
    line: int
    #: Its code, one of ``MARKER_CODES``.
    code: Code
    #: The entry as written: its reason and where it is.
    listed: AllowLine

    @property
    def key(self) -> str:
        """What the entry says before its reason."""
        return _key(self.file, self.line, self.code)


@dataclass(frozen=True, slots=True)
class Defect:
    """A malformed marker, with its file as entries name it."""

    #: ``RELEASE/MEMBER`` for a release's runner
    #: (``vllm-omni==0.30.0/vllm_omni/platforms/npu/worker/npu_ar_model_runner.py``), else
    #: its path from the repository root: the same name on every machine, unlike the
    #: finding's path (a release's is in the download cache).
    file: str
    #: The malformed marker, as the scan found it.
    finding: Finding

    @property
    def key(self) -> str:
        """What an entry accepting it says before its reason."""
        return _key(self.file, self.finding.line, self.finding.code)


def _key(file: str, line: int, code: Code) -> str:
    return f"{file}:{line}: {code.value}"


def parse_marker_allow(text: str, path: str) -> tuple[MarkerEntry, ...]:
    """Entries of a marker-allow file. BadInput (OP005, at its line) for a bad entry."""
    entries = []
    for listed in allow_lines(text, path, FORM):
        found = _KEY.match(listed.key)
        if found is None:
            raise listed.bad(FORM)
        if found["code"] not in MARKER_CODES:
            message = f"{found['code']} is no malformed marker's code (OP101 to OP105)"
            raise BadInput.at(Code.OP005, path, listed.line, message)
        entries.append(MarkerEntry(found["file"], int(found["line"]), Code[found["code"]], listed))
    return tuple(entries)


@dataclass(frozen=True, slots=True)
class MarkerReview:
    """The malformed markers of a run against the reviewed list."""

    #: Every finding of the run in order, each defect an entry lists made a note.
    findings: tuple[Finding, ...]
    #: The defects no entry lists.
    unlisted: tuple[Defect, ...]
    #: Entries that match no defect of the run.
    stale: tuple[MarkerEntry, ...]
    #: The files the run read, as entries name them.
    read: frozenset[str]

    def stale_findings(self, strict: bool) -> list[Finding]:
        """OP005 at each stale entry. An error under ``strict`` (the gate) when the entry
        names a file the run read: its marker was fixed or moved, and an entry left there
        would accept whatever defect lands on that line next. A note otherwise: an entry
        for a file not read (the release before an upgrade) accepts nothing."""
        return [self._stale(entry, strict) for entry in self.stale]

    def _stale(self, entry: MarkerEntry, strict: bool) -> Finding:
        if entry.file in self.read:
            why, severity = "fixed or moved: delete or update it", Severity.ERROR
        else:
            why, severity = "that file was not read", Severity.NOTE
        message = f"marker-allow entry {entry.key} matches no malformed marker ({why})"
        severity = severity if strict else Severity.NOTE
        return Finding(Code.OP005, entry.listed.path, entry.listed.line, message, severity=severity)

    def refusal(self, list_name: str) -> BadInput:
        """Bad input (exit 2) naming each unlisted defect and how to accept it after review,
        with the stale entries (a moved defect shows as both)."""
        hinted = [
            replace(d.finding, message=f"{d.finding.message}; {_how(d, list_name)}")
            for d in self.unlisted
        ]
        return BadInput([*hinted, *self.stale_findings(strict=False)])


def _how(defect: Defect, list_name: str) -> str:
    return (
        f"if it is not yours to fix, accept it after review with the line "
        f"'{defect.key}  REASON' in {list_name} (`upgrade --lenient` writes it)"
    )


def review(
    findings: Sequence[Finding], files: Mapping[str, str], entries: Sequence[MarkerEntry]
) -> MarkerReview:
    """``findings`` against ``entries``; ``files`` names each runner the run read (its path
    in findings) as entries do."""
    used: set[MarkerEntry] = set()
    unlisted: list[Defect] = []
    reviewed: list[Finding] = []
    for finding in findings:
        if finding.code not in MARKER_CODES:
            reviewed.append(finding)
            continue
        defect = Defect(files.get(finding.path, finding.path), finding)
        entry = next((e for e in entries if e.key == defect.key), None)
        if entry is None:
            unlisted.append(defect)
            reviewed.append(finding)
        else:
            used.add(entry)
            reviewed.append(replace(finding, severity=Severity.NOTE))
    stale = tuple(e for e in entries if e not in used)
    return MarkerReview(tuple(reviewed), tuple(unlisted), stale, frozenset(files.values()))


def entry_line(defect: Defect, reason: str) -> str:
    """The line of a marker-allow list that accepts ``defect``."""
    return f"{defect.key}  {reason}\n"


def with_entries(text: str, lines: Sequence[str]) -> str:
    """A marker-allow list (``text``, "" for a new one) with ``lines`` added at its end."""
    start = text or HEADER
    if not start.endswith("\n"):
        start += "\n"
    return start + "".join(lines)
