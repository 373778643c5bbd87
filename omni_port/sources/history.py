"""Upstream history around an upgrade: the releases or commits the history rule reads.

Between a base ``vllm-ascend==B`` and a target ``vllm-ascend==T`` history is every release
that came out in the six months before B, and every one after it up to T, release
candidates and sdist-only releases included (the releases and their dates are asked of
the index once and kept in the cache; an index that gives no dates: the eight releases
before B). Between two revisions of one git clone (``PATH@REV``) it is every commit that
changed the runner module in the six months before the base and up to the target.
Anything else has no history, which only means the history rule has no evidence to give.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code, Finding, Severity
from omni_port.sources import upstream
from omni_port.sources.platform import NPU, Platform
from omni_port.sources.textio import write_atomic
from omni_port.sources.upstream import (
    Progress,
    Release,
    Spec,
    SpecKind,
    parse_spec,
)

#: How far back before the base history reaches: a hand port copies method by method,
#: months apart, so its copies often come from releases well before the one its code
#: matches best as a whole.
BEFORE_BASE_DAYS = 183
#: Releases before the base history includes when the index gives no dates.
BEFORE_BASE = 8
#: Most commits of a clone read between the base and the target, and before the base.
MOST_COMMITS = 200


def window(released: Mapping[str, str], base: str, target: str) -> list[str]:
    """The releases of ``released`` (version -> date, ``YYYY-MM-DD`` or "") from six
    months before ``base`` up to ``target``, in version order.

    Below the base, a release is in when it came out at most ``BEFORE_BASE_DAYS`` before
    the base did. Without a date for the base, the ``BEFORE_BASE`` releases before it are
    (a post release, which re-publishes its release, never takes the place of an older one
    in that count). Empty when the base or the target is not among the releases, or the
    target is older.
    """
    ordered = sorted(released, key=upstream.version_key)
    if base not in ordered or target not in ordered:
        return []
    low, high = ordered.index(base), ordered.index(target)
    if high < low:
        return []
    if released[base]:
        since = (date.fromisoformat(released[base]) - timedelta(days=BEFORE_BASE_DAYS)).isoformat()
        below = [v for v in ordered[:low] if released[v] and released[v] >= since]
        return [*below, *ordered[low : high + 1]]
    counted = [v for v in ordered[:low] if not _is_post(v)][-BEFORE_BASE:]
    start = ordered.index(counted[0]) if counted else low
    return ordered[start : high + 1]


def _is_post(version: str) -> bool:
    return upstream.version_key(version)[3] > 0


def labels(
    base: str, target: str, cache: Path, repo: str = "", platform: Platform = NPU
) -> list[str]:
    """The labels of the releases (or commits) between the base and the target (see the
    module doc) of the ``platform``'s upstream; with a clone (``repo``) that has the base,
    its commits and the releases newer than it."""
    base_spec = parse_spec(base, platform.dist)
    target_spec = parse_spec(target, platform.dist)
    if repo:
        found = _clone_labels(repo, base_spec, target_spec, cache, platform)
        if found:
            return found
    if base_spec.kind is SpecKind.PYPI and target_spec.kind is SpecKind.PYPI:
        if base_spec.dist != target_spec.dist:
            return []
        wanted = (base_spec.version, target_spec.version)
        released = known_releases(base_spec.dist, cache, wanted)
        picked = window(released, *wanted)
        return [Spec(SpecKind.PYPI, base_spec.dist, v).label for v in picked]
    if base_spec.kind is SpecKind.GIT and target_spec.kind is SpecKind.GIT:
        return _commit_labels(base_spec, target_spec, platform.member)
    return []


def _commit_labels(base: Spec, target: Spec, member: str) -> list[str]:
    if Path(base.path).resolve() != Path(target.path).resolve():
        return []
    from omni_port.sources import gitrepo

    before = gitrepo.commits_before(base.path, base.rev, member, BEFORE_BASE_DAYS, MOST_COMMITS)
    between = gitrepo.commits_touching(base.path, base.rev, target.rev, member, MOST_COMMITS)
    target_commit = gitrepo.commit(target.path, target.rev)
    commits = [c for c in between if c != target_commit]
    return [
        *(gitrepo.label(base.path, c) for c in before),
        base.label,
        *(gitrepo.label(base.path, c) for c in commits),
        target.label,
    ]


def _change(label: str, dist: str) -> str:
    """What the commit ``label`` names says of itself ("" for anything but a commit)."""
    from omni_port.sources import gitrepo

    spec = parse_spec(label, dist)
    if spec.kind is not SpecKind.GIT:
        return ""
    found = gitrepo.info(spec.path, spec.rev)
    return f"{found.sha[:10]} {found.subject}"


def _clone_labels(
    repo: str, base: Spec, target: Spec, cache: Path, platform: Platform
) -> list[str]:
    """Upstream history from a clone: the commits that changed the runner module in the six
    months before the base and after it on its lineage (the main line when the base is on
    it), then the releases newer than the clone up to the target (or the target's own
    commit when the clone has it on that lineage). Empty when the clone lacks the base."""
    from omni_port.sources import gitrepo

    member = platform.member
    base_commit = _commit_in(repo, base, cache, platform)
    if not base_commit:
        return []
    ref = next((r for _, r in gitrepo.lineages(repo) if gitrepo.on(repo, base_commit, r)), "")
    if not ref:
        return []
    before = gitrepo.commits_before(repo, base_commit, member, BEFORE_BASE_DAYS, MOST_COMMITS)
    after = gitrepo.after(repo, base_commit, ref, member, MOST_COMMITS)
    target_commit = _commit_in(repo, target, cache, platform)
    if target_commit and target_commit in after:
        after = after[: after.index(target_commit)]
        newer: list[str] = []
    else:
        # A target on another lineage, or older than the clone: no commit made after it is
        # part of the way to it.
        day = _day_of(repo, target, target_commit, cache)
        if day:
            after = gitrepo.after(repo, base_commit, ref, member, MOST_COMMITS, day)
        newest = gitrepo.info(repo, ref).date
        newer = _releases_after(newest, target, cache) if target.kind is SpecKind.PYPI else []
        # A release cut from a release branch the clone has, which the base is not on, is
        # of another lineage (``releases/v0.26.0rc`` for 0.26.0rc1).
        others = [
            name
            for name, branch in gitrepo.lineages(repo)
            if name.startswith("releases/") and not gitrepo.on(repo, base_commit, branch)
        ]
        newer = [label for label in newer if not _on_branch(label, others, platform.dist)]
    return [
        *(gitrepo.label(repo, c) for c in before),
        base.label,
        *(gitrepo.label(repo, c) for c in after),
        *(label for label in newer if label != target.label),
        target.label,
    ]


def _on_branch(label: str, branches: Sequence[str], dist: str) -> bool:
    """Whether the release ``label`` is named after one of the release ``branches``."""
    version = parse_spec(label, dist).version
    line = re.sub(r"(rc|\.post)\d+$", "", version)
    return bool(line) and any(b.removeprefix("releases/v").startswith(line) for b in branches)


def _day_of(repo: str, target: Spec, commit: str, cache: Path) -> str:
    """The day the target was made: its commit's, or the day the release came out ("" when
    unknown)."""
    from omni_port.sources import gitrepo

    if commit:
        return gitrepo.info(repo, commit).date
    if target.kind is not SpecKind.PYPI:
        return ""
    try:
        return known_releases(target.dist, cache, (target.version,)).get(target.version, "")
    except BadInput:
        return ""


def _commit_in(repo: str, spec: Spec, cache: Path, platform: Platform) -> str:
    """The commit of ``repo`` that ``spec`` is: a revision of that clone, or a release whose
    ``_version.py`` names a commit the clone has ("" otherwise)."""
    from omni_port.sources import gitrepo

    if spec.kind is SpecKind.GIT:
        same = Path(spec.path).resolve() == Path(repo).resolve()
        return gitrepo.has(repo, spec.rev) if same else ""
    if spec.kind is not SpecKind.PYPI:
        return ""
    try:
        located = upstream.locate(spec, version_file(platform), cache)
    except BadInput:
        return ""
    found = _COMMIT_ID.search(located.source.text)
    return gitrepo.has(repo, found.group("sha")) if found else ""


def version_file(platform: Platform) -> str:
    """The module of an upstream release that names the commit it was built from
    (``vllm_ascend/_version.py``, ``vllm/_version.py``), as setuptools-scm writes it."""
    return f"{platform.module.partition('.')[0]}/_version.py"


#: ``__commit_id__ = commit_id = 'g8fde6d4e3'``, as setuptools-scm writes it.
_COMMIT_ID = re.compile(
    r"""
    commit_id \s* = \s*        # the last of the chained names
    ['"] g (?P<sha>[0-9a-f]{7,40}) ['"]   # git's abbreviated hash, after a 'g'
    """,
    re.VERBOSE,
)


def _releases_after(day: str, target: Spec, cache: Path) -> list[str]:
    """The releases of the target's distribution that came out after ``day``, up to the
    target, oldest version first; newer than every release out by then (a post release of
    an older line is on another lineage)."""
    released = known_releases(target.dist, cache, (target.version,))
    key = upstream.version_key
    top = key(target.version)
    floor = max((key(v) for v, when in released.items() if when and when <= day), default=None)
    picked = [
        v
        for v, when in released.items()
        if when and when > day and key(v) <= top and (floor is None or key(v) > floor)
    ]
    return [
        Spec(SpecKind.PYPI, target.dist, v).label for v in sorted(picked, key=upstream.version_key)
    ]


def known_releases(
    dist: str, cache: Path, wanted: Sequence[str], after: str = ""
) -> dict[str, str]:
    """Every release of ``dist`` (wheel or sdist) with its date: the list kept in the
    cache while it has every ``wanted`` version and, with ``after`` (``YYYY-MM-DD``), a
    release published after that day (then it was asked for after that day, and lists
    every release out by then), else asked of the index again (and kept)."""
    kept = cache / "versions" / f"{dist}.dated.txt"
    released = _kept_releases(kept)
    if (
        released is not None
        and all(v in released for v in wanted)
        and (not after or _listed_after(kept, released, after))
    ):
        return released
    released = upstream.dated_releases(dist)
    text = "".join(f"{v} {d}".rstrip() + "\n" for v, d in released.items())
    write_atomic(kept, text.encode())
    write_atomic(_asked(kept), f"{datetime.now(UTC).date().isoformat()}\n".encode())
    return released


def _asked(kept: Path) -> Path:
    """Where the day the kept list was asked of the index is kept."""
    return kept.with_name(kept.name.replace(".dated.txt", ".asked.txt"))


def _listed_after(kept: Path, released: Mapping[str, str], day: str) -> bool:
    """Whether the kept list was asked for after ``day``: it lists a release published
    later, or it was asked on a later day."""
    if any(when > day for when in released.values()):
        return True
    try:
        asked = _asked(kept).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return asked > day


#: A line of the kept list: a version, and the day it came out when the index says.
_RELEASE_ROW = re.compile(
    r"""^(?P<version>[0-9][0-9A-Za-z.+!-]*)          # a version as the index spells it
    (?:\x20(?P<day>[0-9]{4}-[0-9]{2}-[0-9]{2}))?$   # and its day, YYYY-MM-DD
    """,
    re.VERBOSE,
)


def _kept_releases(kept: Path) -> dict[str, str] | None:
    """The releases listed in ``kept`` with their days; None when there is no list or it
    is damaged (not UTF-8, a line that is no version and day: a list cut short mid-line
    would date a release wrongly), so that the index is asked again."""
    try:
        lines = kept.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    rows = [_RELEASE_ROW.match(line) for line in lines]
    if not lines or None in rows:
        return None
    return {row["version"]: row["day"] or "" for row in rows if row is not None}


def load(
    names: Sequence[str], cache: Path, progress: Progress | None = None, platform: Platform = NPU
) -> tuple[tuple[Release, ...], tuple[tuple[str, str], ...], list[Finding]]:
    """The releases of the ``platform``'s upstream module named by ``names``: (releases,
    (label, sha256) of each, notes).

    A release that cannot be had is left out with a note: history is evidence, and less of
    it only leaves more conflicts.
    """
    releases: list[Release] = []
    digests: list[tuple[str, str]] = []
    notes: list[Finding] = []
    for name in names:
        try:
            spec = parse_spec(name, platform.dist)
            located = upstream.locate(spec, platform.member, cache, progress)
        except BadInput as error:
            first = error.findings[0]
            message = f"left out of upstream history: {first.message}"
            notes.append(Finding(Code.OP003, name, 0, message, severity=Severity.NOTE))
            continue
        change = _change(name, platform.dist)
        releases.append(Release(name, located.source.text, cache, change=change))
        digests.append((name, located.source.sha256))
    return tuple(releases), tuple(digests), notes
