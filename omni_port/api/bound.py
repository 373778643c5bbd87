"""How new a candidate base may be: no clone commit after the runners' release, no
release newer than the target.

A hand port copies upstream code that existed when it was made, but it copies upstream's
main branch of its day, not a release: vLLM-Omni's GPU copies match vLLM releases of the
weeks after them better than the last release before them (0.18.0 scores 0.756 on vLLM
0.23.0, 0.743 on 0.18.0), and leaving later releases out made the GPU replay's pairs older
and its wrong statements 12 -> 34. So releases are not bounded by date; with a clone, the
commits made after the runners' release (the day the index gives for its first file) are
no candidates, since a commit is what main was. An upgrade's base is older than its
target: a release newer than the target is no base; the same rule for every platform.
Days, not times: a commit of the runners' release's day stays a candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Located
from omni_port.sources.history import known_releases
from omni_port.sources.upstream import Spec, SpecKind, parse_spec, version_key

#: The distribution whose releases hold the runners.
OMNI = "vllm-omni"


@dataclass(frozen=True, slots=True)
class Bound:
    """What bounds the candidate bases of some runners (nothing, by default)."""

    #: The runners' release (``vllm-omni==0.32.0rc1``); "" when they come from elsewhere.
    source: str = ""
    #: The day it was published (``YYYY-MM-DD``); "" when unknown: no bound by date.
    day: str = ""
    #: The upgrade's target release of the upstream (``vllm==0.33.0``); "" for none.
    target: str = ""
    #: The day the target was published ("" when unknown or without a target).
    target_day: str = ""

    @property
    def until(self) -> str:
        """The last day a candidate may have been made ("" for any day)."""
        return min((d for d in (self.day, self.target_day) if d), default="")

    def reason(self, spec: Spec) -> str:
        """Why the release ``spec`` is no candidate; "" when it is one."""
        if self.target:
            top = parse_spec(self.target, spec.dist)
            if top.kind is SpecKind.PYPI and version_key(spec.version) > version_key(top.version):
                return f"newer than the target {self.target}"
        return ""

    def describe(self) -> str:
        """The bound in words, for the summary."""
        if not self.day:
            why = f"no publication day of {self.source}" if self.source else "runners of no release"
            return f"clone commits not bounded by date ({why})"
        return f"clone commits made by {self.day} ({self.source})"


def of(located: Sequence[Located], cache: Path, target: str = "", dist: str = "") -> Bound:
    """The bound of ``located`` runners (and of an upgrade to ``target`` of the upstream
    ``dist``): by their release's day when they all come from one vllm-omni release the
    index dates (the release list kept in the cache serves while it holds it)."""
    labels = {r.label for r in located}
    spec = release(next(iter(labels)), OMNI) if len(labels) == 1 else None
    top = release(target, dist)
    return Bound(
        source=spec.label if spec is not None else "",
        day=_published(spec, cache) if spec is not None else "",
        target=top.label if top is not None else "",
        target_day=_published(top, cache) if top is not None else "",
    )


def left_out(labels: Sequence[str], bound: Bound, dist: str) -> dict[str, str]:
    """The release ``labels`` of ``dist`` the ``bound`` leaves out, each with the reason
    (others, paths and commits, are candidates: commits are bounded where a clone is read)."""
    specs = {label: release(label, dist) for label in labels}
    reasons = {
        label: bound.reason(s) for label, s in specs.items() if s is not None and s.dist == dist
    }
    return {label: why for label, why in reasons.items() if why}


def release(text: str, dist: str) -> Spec | None:
    """The release ``text`` names on the index (None for anything else, or nothing)."""
    if not text:
        return None
    try:
        spec = parse_spec(text, dist or OMNI)
    except BadInput:
        return None  # said where it is read
    return spec if spec.kind is SpecKind.PYPI else None


def _published(spec: Spec, cache: Path) -> str:
    """The day ``spec`` was published, as the index says ("" when it cannot say)."""
    return days(spec.dist, [spec.version], cache).get(spec.version, "")


def days(dist: str, versions: Sequence[str], cache: Path, after: str = "") -> Mapping[str, str]:
    """The publication day of each release of ``dist`` (the kept list while it holds every
    one of ``versions`` and was asked for after ``after``); none when the index cannot say."""
    try:
        return known_releases(dist, cache, versions, after)
    except BadInput:
        return {}
