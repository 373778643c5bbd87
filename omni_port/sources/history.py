"""Upstream history around an upgrade: the releases or commits the history rule reads.

Between a base ``vllm-ascend==B`` and a target ``vllm-ascend==T`` history is every release
that came out in the six months before B (or since the platform's floor, when that is
older), and every one after it up to T, release candidates and sdist-only releases
included (the releases and their dates are asked of the index once and kept in the cache;
an index that gives no dates: the eight releases before B). Between two revisions of one
git clone (``PATH@REV``) it is every commit that changed the runner module in the six
months before the base and up to the target. With a clone of upstream (``upstream-repo``)
that has the base, it is the clone's commits on the way from the base to the target, in
the order of the releases that first held them (``_clone_labels``). Anything else has no
history, which only means the history rule has no evidence to give.
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


def window(released: Mapping[str, str], base: str, target: str, floor: str = "") -> list[str]:
    """The releases of ``released`` (version -> date, ``YYYY-MM-DD`` or "") from six
    months before ``base``, or from ``floor`` when that is older, up to ``target``, in
    version order.

    Below the base, a release is in when it came out at most ``BEFORE_BASE_DAYS`` before
    the base did, or is ``floor`` or newer (the platform's oldest release its runners were
    ported from: a hand port's copy of a method can be that old, and a change upstream made
    after it is dated only by a release that lacks it). Without a date for the base, the
    ``BEFORE_BASE`` releases before it are (a post release, which re-publishes its release,
    never takes the place of an older one in that count). Empty when the base or the target
    is not among the releases, or the target is older.
    """
    ordered = sorted(released, key=upstream.version_key)
    if base not in ordered or target not in ordered:
        return []
    low, high = ordered.index(base), ordered.index(target)
    if high < low:
        return []
    older = ordered[:low]
    if released[base]:
        since = (date.fromisoformat(released[base]) - timedelta(days=BEFORE_BASE_DAYS)).isoformat()
        recent = [v for v in older if released[v] and released[v] >= since]
    else:
        counted = [v for v in older if not _is_post(v)][-BEFORE_BASE:]
        recent = older[older.index(counted[0]) :] if counted else []
    lowest = upstream.version_key(floor) if floor else None
    below = [
        v
        for v in older
        if v in recent or (lowest is not None and upstream.version_key(v) >= lowest)
    ]
    return [*below, *ordered[low : high + 1]]


def _is_post(version: str) -> bool:
    return upstream.version_key(version)[3] > 0


def labels(
    base: str, target: str, cache: Path, repo: str = "", platform: Platform = NPU
) -> list[str]:
    """The labels of the releases (or commits) between the base and the target (see the
    module doc; below the base, back to the ``platform``'s floor when that is older than six
    months before it) of the ``platform``'s upstream; with a clone (``repo``) that has the base,
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
        picked = window(released, *wanted, platform.floor)
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
    months before the base, then those on the way from the base to the target, then the
    releases newer than the clone up to the target. Empty when the clone lacks the base.

    The way is every commit the target holds and the base does not (``gitrepo.way``), in the
    order of the release that first held each: the earliest release, by version, whose tag
    holds the commit by ancestry (a backport is held by its branch's tags only, where a date
    would credit it to whichever release came out next). Each of those releases' tags is a
    stop of the way, so the releases a clone holds keep the order releases alone give them,
    with the commits in between: a release on a side branch (the base's ``releases/v0.18.0``)
    hides none of the main line's. A target the clone lacks is reached through the clone's
    newest release below it or, when it is newer than every release the clone holds, through
    the main line up to the target's day and the releases out since (``_beyond``)."""
    from omni_port.sources import gitrepo

    base_commit = _commit_in(repo, base, cache, platform)
    if not base_commit:
        return []
    member = platform.member
    before = gitrepo.commits_before(repo, base_commit, member, BEFORE_BASE_DAYS, MOST_COMMITS)
    target_commit = _commit_in(repo, target, cache, platform)
    tip, until, newer = _tip(repo, base_commit, target, target_commit, cache, platform)
    stops = _stops(repo, base_commit, tip, target) if tip else []
    way = gitrepo.way(repo, base_commit, tip, member, stops, until) if tip else []
    after = _capped([c for c in way if c != target_commit], stops, MOST_COMMITS)
    return [
        *(gitrepo.label(repo, c) for c in before),
        base.label,
        *(gitrepo.label(repo, c) for c in after),
        *(label for label in newer if label != target.label),
        target.label,
    ]


def _tip(
    repo: str, base: str, target: Spec, target_commit: str, cache: Path, platform: Platform
) -> tuple[str, str, list[str]]:
    """Where the way through the clone ends: (its last commit, the day it is cut at or "",
    the releases newer than the clone after it). The target's commit when the clone has it;
    else, for a release, the clone's newest release below it, or ``_beyond`` when the clone
    holds none as new; else nowhere ("")."""
    from omni_port.sources import gitrepo

    if target_commit:
        return target_commit, "", []
    if target.kind is not SpecKind.PYPI:
        return "", "", []
    key = upstream.version_key
    held = gitrepo.releases(repo)
    below = [v for v in held if key(v) <= key(target.version)]
    if len(below) < len(held):
        newest = max(below, key=key, default="")
        return (held[newest] if newest else ""), "", []
    return _beyond(repo, base, target, cache, platform)


def _beyond(
    repo: str, base: str, target: Spec, cache: Path, platform: Platform
) -> tuple[str, str, list[str]]:
    """The way to a release newer than every release the clone holds: the main line up to
    the target's day, then the releases that came out after the clone's newest commit. A
    release cut from a release branch the clone has, which the base is not on, is of another
    lineage and left out (``releases/v0.26.0rc`` for 0.26.0rc1: older code than a base on
    the main line after the branch point)."""
    from omni_port.sources import gitrepo

    lines = gitrepo.lineages(repo)
    main = next((ref for name, ref in lines if name in ("main", "master")), "")
    newest = max((gitrepo.info(repo, ref).date for _, ref in lines), default="")
    newer = _releases_after(newest, target, cache) if newest else []
    others = [
        name
        for name, branch in lines
        if name.startswith("releases/") and not gitrepo.on(repo, base, branch)
    ]
    newer = [label for label in newer if not _on_branch(label, others, platform.dist)]
    return main, _day_of(repo, target, "", cache), newer


def _stops(repo: str, base: str, tip: str, target: Spec) -> list[str]:
    """The commits of the releases on the way from ``base`` to ``tip``, in release order:
    every release tag of the clone the base does not hold that comes after the base (after
    its own release; without one, from the first release that holds it) and before the
    target (up to the target's release; for a commit, before the first release that holds
    it), the release branches' tags included; and every tag ``tip`` holds."""
    from omni_port.sources import gitrepo

    tags = gitrepo.releases(repo)
    older = gitrepo.releases(repo, base)
    held = gitrepo.releases(repo, tip)
    low = _position(tags, base, gitrepo.releases(repo, holding=base))
    if target.kind is SpecKind.PYPI:
        high: Position = (0, upstream.version_key(target.version), 1)
    else:
        high = _position(tags, tip, gitrepo.releases(repo, holding=tip))
    between = [v for v in tags if v not in older and low < (0, upstream.version_key(v), 0) < high]
    on_way = sorted({*between, *(v for v in held if v not in older)}, key=upstream.version_key)
    return list(dict.fromkeys(tags[v] for v in on_way if tags[v] not in (base, tip)))


#: Where a commit sits among the releases: (1 when after every release, else 0; a release's
#: version key; -1 just before that release, 0 at it, 1 just after it).
Position = tuple[int, tuple[tuple[int, ...], int, int, int], int]


def _position(tags: Mapping[str, str], commit: str, holding: Mapping[str, str]) -> Position:
    """Where ``commit`` sits among the releases ``tags`` (version to commit): just after its
    own release when a tag names it, else just before the first release (by version) of
    those ``holding`` it; after every release when none does."""
    key = upstream.version_key
    own = [key(v) for v, c in tags.items() if c == commit]
    if own:
        return 0, max(own), 1
    if holding:
        return 0, min(key(v) for v in holding), -1
    return 1, key(""), 0


def _capped(commits: Sequence[str], stops: Sequence[str], limit: int) -> list[str]:
    """The ``limit`` first of ``commits``, and every release's commit after them: past the
    cap the clone still knows what releases alone would."""
    kept = set(stops)
    return [c for i, c in enumerate(commits) if i < limit or c in kept]


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
