"""Bases from a clone of vllm-ascend: its commits ranked, on the lineage each is on.

A hand port is made from some revision of upstream, not from a release: with a clone at
hand (``upstream-repo``), the candidates are the commits that changed the runner module on
the main line and on each release branch, over the year before the clone's newest one,
plus the releases newer than the clone. Ranking every commit would parse hundreds of
revisions, so the ranking is coarse first (every few commits of each lineage), then fine
around the best few, whose neighbours on their lineage are ranked too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date, timedelta

from omni_port.api.inputs import Settings, locate_text
from omni_port.errors import BadInput
from omni_port.extract import basedetect
from omni_port.model import Tree
from omni_port.sources import gitrepo
from omni_port.sources.history import known_releases
from omni_port.sources.trees import kept_keys
from omni_port.sources.upstream import Spec, SpecKind, version_key

#: How far back before the clone's newest commit its commits are candidates.
DAYS = 365
#: Commits of each lineage ranked in the first pass.
COARSE = 24
#: The best commits of the first pass whose neighbours are ranked too.
REFINE = 3

#: Candidates by label, each as the keys of its upstream class's methods.
Keys = dict[str, basedetect.MethodKeys]


def candidates(
    runners: Sequence[Tree], settings: Settings, until: str = ""
) -> tuple[Keys, dict[str, str]]:
    """The candidates a clone gives, coarse then fine (see the module doc), with the
    lineage (branch) of each commit; with ``until`` (YYYY-MM-DD), those a maintainer had
    on that day: commits made by then, releases out by then."""
    config = settings.config
    member = config.platform_info.member
    cache = settings.cache
    repo = str(config.path(config.upstream_repo))
    refs = gitrepo.lineages(repo)
    newest = max((gitrepo.info(repo, ref).date for _, ref in refs), default="")
    if until and newest:
        newest = min(newest, until)
    since = (date.fromisoformat(newest) - timedelta(days=DAYS)).isoformat() if newest else ""
    lines = {name: gitrepo.first_parent(repo, ref, member, since, until) for name, ref in refs}
    owner = _owners(lines)
    keys: Keys = {}
    lineage: dict[str, str] = {}
    labels: dict[str, str] = {}

    def rank(commits: Mapping[str, str]) -> None:
        wanted = [c for c in commits if c not in labels]
        for commit, text in gitrepo.texts(repo, wanted, member).items():
            label = gitrepo.label(repo, commit)
            labels[commit] = label
            keys[label] = kept_keys(text, config.upstream_class, cache, basedetect.method_keys)
            lineage[label] = commits[commit]

    steps = {name: max(1, math.ceil(len(cs) / COARSE)) for name, cs in lines.items()}
    rank({c: owner[c] for n, cs in lines.items() for c in [*cs[:: steps[n]], *cs[:1]]})
    for best in basedetect.rank(runners, keys)[:REFINE]:
        name = lineage[best.label]
        commits = lines[name]
        at = next(i for i, c in enumerate(commits) if labels.get(c) == best.label)
        step = steps[name]
        rank({c: owner[c] for c in commits[max(at - step, 0) : at + step + 1]})
    for release in _newer(settings, newest, until):
        found = locate_text(Spec(SpecKind.PYPI, config.platform_info.dist, release).label, settings)
        text = found.source.text
        keys[found.label] = kept_keys(text, config.upstream_class, cache, basedetect.method_keys)
    # In lineage order (the main line first), newest first: ``ranked`` breaks ties by it.
    ordered = [labels[c] for cs in lines.values() for c in cs if c in labels]
    return keys, {label: lineage[label] for label in dict.fromkeys(ordered)}


def _owners(lines: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The lineage each commit is on: the first of ``lines`` (the main line first) that
    holds it. A release branch's first-parent history reaches back through the main line
    before its branch point; those commits are the main line's."""
    owner: dict[str, str] = {}
    for name, commits in lines.items():
        for commit in commits:
            owner.setdefault(commit, name)
    return owner


def ranked(
    runners: Sequence[Tree], keys: Keys, lineage: Mapping[str, str]
) -> list[basedetect.BaseScore]:
    """``keys`` ranked, each commit with the lineage it is on. Of candidates that explain the
    runners alike, the one with less upstream code in the copied methods the runners lack
    (``coverage``: code that came after the copy), then by lineage (the main line first) and
    the newest first: the changes between them touch no copied statement."""
    order = {label: position for position, label in enumerate(lineage)}
    scores = [replace(s, lineage=lineage.get(s.label, "")) for s in basedetect.rank(runners, keys)]
    return sorted(
        scores,
        key=lambda s: (-s.similarity, -s.coverage, order.get(s.label, len(order)), s.label),
    )


def _newer(settings: Settings, newest: str, until: str = "") -> list[str]:
    """The upstream releases (vllm-ascend's, or vLLM's) that came out after the clone's
    newest commit, up to the day ``until`` when given (none when the index cannot say: the
    clone's commits are ranked alone)."""
    if not newest:
        return []
    try:
        released = known_releases(settings.config.platform_info.dist, settings.cache, ())
    except BadInput:
        return []
    out = [v for v, day in released.items() if day and day > newest and day <= (until or day)]
    return sorted(out, key=version_key)
