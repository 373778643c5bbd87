"""Upstream history around an upgrade: the releases or commits the history rule reads.

Between a base ``vllm-ascend==B`` and a target ``vllm-ascend==T`` history is every release
from a few releases before B up to T, release candidates and sdist-only releases included
(the list of versions is asked of the index once and kept in the cache). Between two
revisions of one
git clone (``PATH@REV``) it is every commit that changed the runner module, and a few
before the base. Anything else has no history, which only means the history rule has no
evidence to give.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code, Finding, Severity
from omni_port.sources import upstream
from omni_port.sources.textio import write_atomic
from omni_port.sources.upstream import (
    ASCEND_RUNNER,
    Progress,
    Release,
    Spec,
    SpecKind,
    parse_spec,
)

#: Releases (or commits) before the base that history includes: a hand port's copies often
#: come from a release or two before the one its code matches best as a whole.
BEFORE_BASE = 8
#: Most commits of a clone read between the base and the target.
MOST_COMMITS = 200


def window(versions: Sequence[str], base: str, target: str, before: int = BEFORE_BASE) -> list[str]:
    """``versions`` from ``before`` releases below ``base`` up to ``target``, oldest first.

    A post release (``0.23.0.post1``) re-publishes its release: it is in the window when its
    release is, and never takes the place of an older release in the count. Empty when the
    base or the target is not among the versions, or the target is older.
    """
    ordered = sorted(set(versions), key=upstream.version_key)
    if base not in ordered or target not in ordered:
        return []
    low, high = ordered.index(base), ordered.index(target)
    if high < low:
        return []
    below = [v for v in ordered[:low] if not _is_post(v)][-before:] if before else []
    start = ordered.index(below[0]) if below else low
    return ordered[start : high + 1]


def _is_post(version: str) -> bool:
    return upstream.version_key(version)[3] > 0


def labels(base: str, target: str, cache: Path) -> list[str]:
    """The labels of the releases between the base and the target (see the module doc)."""
    base_spec = parse_spec(base, "vllm-ascend")
    target_spec = parse_spec(target, "vllm-ascend")
    if base_spec.kind is SpecKind.PYPI and target_spec.kind is SpecKind.PYPI:
        if base_spec.dist != target_spec.dist:
            return []
        wanted = (base_spec.version, target_spec.version)
        versions = known_versions(base_spec.dist, cache, wanted)
        picked = window(versions, *wanted)
        return [Spec(SpecKind.PYPI, base_spec.dist, v).label for v in picked]
    if base_spec.kind is SpecKind.GIT and target_spec.kind is SpecKind.GIT:
        return _commit_labels(base_spec, target_spec)
    return []


def _commit_labels(base: Spec, target: Spec) -> list[str]:
    if Path(base.path).resolve() != Path(target.path).resolve():
        return []
    from omni_port.sources import gitrepo

    before = gitrepo.commits_before(base.path, base.rev, ASCEND_RUNNER, BEFORE_BASE)
    between = gitrepo.commits_touching(base.path, base.rev, target.rev, ASCEND_RUNNER, MOST_COMMITS)
    target_commit = gitrepo.commit(target.path, target.rev)
    commits = [c for c in between if c != target_commit]
    return [
        *(gitrepo.label(base.path, c) for c in before),
        base.label,
        *(gitrepo.label(base.path, c) for c in commits),
        target.label,
    ]


def known_versions(dist: str, cache: Path, wanted: Sequence[str]) -> list[str]:
    """Every release of ``dist`` (wheel or sdist): the list kept in the cache while it has
    every ``wanted`` version, else asked of the index again (and kept)."""
    kept = cache / "versions" / f"{dist}.releases.txt"
    if kept.is_file():
        versions = kept.read_text(encoding="utf-8").split()
        if all(v in versions for v in wanted):
            return versions
    versions = upstream.release_versions(dist)
    write_atomic(kept, "".join(v + "\n" for v in versions).encode())
    return versions


def load(
    names: Sequence[str], cache: Path, progress: Progress | None = None
) -> tuple[tuple[Release, ...], tuple[tuple[str, str], ...], list[Finding]]:
    """The releases named by ``names``: (releases, (label, sha256) of each, notes).

    A release that cannot be had is left out with a note: history is evidence, and less of
    it only leaves more conflicts.
    """
    releases: list[Release] = []
    digests: list[tuple[str, str]] = []
    notes: list[Finding] = []
    for name in names:
        try:
            located = upstream.locate(
                parse_spec(name, "vllm-ascend"), ASCEND_RUNNER, cache, progress
            )
        except BadInput as error:
            first = error.findings[0]
            message = f"left out of upstream history: {first.message}"
            notes.append(Finding(Code.OP003, name, 0, message, severity=Severity.NOTE))
            continue
        releases.append(Release(name, located.source.text, cache))
        digests.append((name, located.source.sha256))
    return tuple(releases), tuple(digests), notes
