"""Where omni's copies of vLLM's methods lag the vLLM release the NPU runner runs on.

omni's V2 runners replace some of vLLM's methods with copies of an older vLLM's
(``execute_model`` of vllm-omni 0.30.0 matches vLLM 0.28.0 best). ``v2-sync`` wraps such a
copy as it is, so the steps vLLM added since then (``input_batch.dcp_local_seq_lens``,
``kv_connector.finish_forward()``, ``pre_forward``'s keywords) never run on the NPU. A step
is a statement of the pinned release's method that the copy's own base lacks (vLLM added
or changed it after the copy was made) and that omni's copy lacks too (omni did not
follow). Statements the base had and omni's copy dropped are omni's edits, not lags.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.gpu import vllm_delta
from omni_port.model import Code, Finding, Severity, Stmt, Suite, Upstream
from omni_port.pyast import diff
from omni_port.report import shorten
from omni_port.sources.fetch import version_key

_RELEASE = re.compile(r"==(?P<version>\S+)$")


@dataclass(frozen=True, slots=True)
class Step:
    """A statement of the pinned vLLM's method that omni's copy lacks."""

    #: The statement's normalized text (a compound statement: its header).
    key: str
    #: Its line in the pinned vLLM's runner module.
    line: int
    #: The first candidate release after the copy's base that has it ("" when none says).
    since: str


@dataclass(frozen=True, slots=True)
class Lag:
    """One omni copy of a vLLM method and the steps of the pinned vLLM's it lacks."""

    path: str
    line: int
    owner: str
    member: str
    #: vLLM's method the copy copies (``execute_model``).
    upstream: str
    #: The release the copy matches best, and the one the NPU runner runs on.
    copied_from: str
    runs_on: str
    #: Path of the pinned vLLM's runner module (for each step's location).
    runs_on_path: str
    steps: tuple[Step, ...]


def lags(
    found: vllm_delta.Delta, pinned: Upstream, candidates: Mapping[str, Upstream]
) -> list[Lag]:
    """Every copied method whose pinned vLLM method has steps the copy lacks."""
    result = []
    for method in found.methods:
        name = method.copy.upstream_name
        current = vllm_delta.class_method(pinned.tree, vllm_delta.GPU_CLASS, name)
        mine = vllm_delta.class_method(found.trees[method.base.module], method.copy.owner, name)
        if current is None or mine is None or method.base.base == pinned.label:
            continue
        have = set(diff.flat_keys(mine.clauses[0]))
        new = [s for s in _changed(method.base_method.clauses[0], current.clauses[0])]
        releases = _between(candidates, method.base.base, pinned.label)
        steps = tuple(
            Step(s.key, s.start, _since(s.key, name, releases)) for s in new if s.key not in have
        )
        if steps:
            origin = method.copy.origin
            result.append(
                Lag(
                    origin.path,
                    origin.start,
                    method.copy.owner,
                    method.copy.name,
                    name,
                    method.base.base,
                    pinned.label,
                    pinned.tree.path,
                    steps,
                )
            )
    return result


def _changed(old: Suite, new: Suite) -> Iterator[Stmt]:
    """Statements of ``new`` that ``old`` has not as they are: unpaired ones (a compound
    one by its header alone) and paired compound ones whose header changed."""
    match = diff.align(old, new)
    paired = match.new_to_old()
    for index, stmt in enumerate(new.stmts):
        if index not in paired:
            yield stmt
            continue
        if stmt.key != old.stmts[paired[index]].key:
            yield stmt
        for clause in stmt.clauses:
            child = match.child_for(clause)
            yield from clause.stmts if child is None else _changed(child.old, clause)


def _between(candidates: Mapping[str, Upstream], after: str, upto: str) -> list[Upstream]:
    """The candidate releases newer than ``after`` and not newer than ``upto``, oldest
    first (none when a label is not a release)."""
    low, high = _version(after), _version(upto)
    if low is None or high is None:
        return []
    found = [
        (key, c)
        for c in candidates.values()
        if (key := _version(c.label)) is not None and low < key <= high
    ]
    return [c for _, c in sorted(found, key=lambda pair: pair[0])]


def _version(label: str) -> tuple[tuple[int, ...], int, int, int] | None:
    match = _RELEASE.search(label)
    return version_key(match.group("version")) if match else None


def _since(key: str, name: str, releases: Sequence[Upstream]) -> str:
    for release in releases:
        method = vllm_delta.class_method(release.tree, vllm_delta.GPU_CLASS, name)
        if method is not None and key in diff.flat_keys(method.clauses[0]):
            return release.label
    return ""


def findings(found: Sequence[Lag]) -> list[Finding]:
    """A note (OP335) per step an omni copy lacks, at omni's method, naming the releases."""
    notes = []
    for lag in found:
        for step in lag.steps:
            since = f", since {step.since}" if step.since else ""
            message = (
                f"{lag.owner}.{lag.member} is a copy of {lag.copied_from}'s "
                f"{vllm_delta.GPU_CLASS}.{lag.upstream}, and {lag.runs_on}'s (the release the "
                f"NPU runner runs on) has a step it lacks{since}: `{shorten(step.key)}` "
                f"({lag.runs_on_path}:{step.line})"
            )
            notes.append(Finding(Code.OP335, lag.path, lag.line, message, severity=Severity.NOTE))
    return notes
