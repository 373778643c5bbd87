"""Read files of a local git clone at any revision, without checking anything out.

``PATH@REV`` specs read through ``git show`` and ``git cat-file``: the working tree of the
clone is never touched, so a maintainer's checkout stays as it is.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code


def _git(path: str, args: Sequence[str], what: str, data: bytes | None = None) -> bytes:
    """Run git in the clone at ``path``; BadInput (OP003) naming ``what`` when it fails."""
    command = ["git", "-C", path, *args]
    try:
        result = subprocess.run(command, input=data, capture_output=True, check=False)
    except OSError as exc:
        raise BadInput.at(Code.OP003, what, 0, f"cannot run git: {exc.strerror}") from None
    if result.returncode != 0:
        error = result.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = error[-1] if error else f"git {' '.join(args[:2])} failed"
        raise BadInput.at(Code.OP003, what, 0, reason)
    return result.stdout


def show(path: str, rev: str, member: str) -> bytes:
    """The bytes of ``member`` (relative to the clone's directory; a bare repository's
    root) at ``rev``."""
    relative = "./" if (Path(path) / ".git").exists() else ""
    return _git(path, ["show", f"{rev}:{relative}{member}"], f"{path}@{rev}/{member}")


def commit(path: str, rev: str) -> str:
    """The full hash of the commit ``rev`` names."""
    out = _git(path, ["rev-parse", "--verify", f"{rev}^{{commit}}"], f"{path}@{rev}")
    return out.decode().strip()


def pinned(path: str, rev: str) -> str:
    """``rev`` as a label may keep it: a branch (or ``HEAD``) moves, so it becomes its
    commit's tag or 12 hex digits (``label``); a tag or a hash stays as given."""
    if re.fullmatch(r"[0-9a-f]{7,40}", rev):
        return rev  # a hash (history names hundreds): no git to ask
    refs = [f"refs/heads/{rev}", f"refs/remotes/{rev}"] if rev != "HEAD" else []
    moving = rev == "HEAD" or any(_has_ref(path, ref) for ref in refs)
    return _named(path, commit(path, rev)) if moving else rev


def _has_ref(path: str, ref: str) -> bool:
    """Whether the clone has the full ref ``ref`` (False when git cannot run: the next git
    command says why, as BadInput)."""
    command = ["git", "-C", path, "show-ref", "--verify", "--quiet", ref]
    try:
        return subprocess.run(command, capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def commits_touching(path: str, since: str, until: str, member: str, limit: int) -> list[str]:
    """Commits after ``since`` up to ``until`` that change ``member``, oldest first: the
    ``limit`` oldest of them (git applies ``--max-count`` before ``--reverse``, which would
    keep the newest, so the cap is applied here)."""
    out = _git(
        path,
        ["rev-list", "--reverse", f"{since}..{until}", "--", member],
        f"{path}@{since}..{until}",
    )
    return out.decode().split()[:limit]


def commits_before(path: str, rev: str, member: str, days: int, limit: int) -> list[str]:
    """The commits before ``rev`` that change ``member`` and were made at most ``days``
    before it, the newest ``limit`` of them, oldest first (none when ``rev`` is the root
    commit)."""
    own = commit(path, rev)
    when = int(_git(path, ["show", "-s", "--format=%ct", own], f"{path}@{rev}").decode().strip())
    since = when - days * 24 * 3600
    args = ["rev-list", f"--max-count={limit + 1}", f"--since={since}", own, "--", member]
    found = [c for c in _git(path, args, f"{path}@{rev}").decode().split() if c != own]
    return list(reversed(found[:limit]))


def label(path: str, commit: str) -> str:
    """``PATH@TAG`` for a tagged commit (the first tag, sorted), else ``PATH@<12 hex>``."""
    return f"{path}@{_named(path, commit)}"


def _named(path: str, commit: str) -> str:
    """A commit's first tag (sorted), else its 12 hex digits."""
    tags = _git(path, ["tag", "--points-at", commit], f"{path}@{commit}").decode().split()
    return sorted(tags)[0] if tags else commit[:12]


def python_files(path: str, rev: str, package: str) -> dict[str, str]:
    """Every ``.py`` file of ``package`` at ``rev``, by path, as text (one git process)."""
    listing = _git(path, ["ls-tree", "-r", "-z", rev, "--", package], f"{path}@{rev}")
    entries: list[tuple[str, str]] = []
    for row in listing.split(b"\0"):
        meta, _, raw = row.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob" and raw.endswith(b".py"):
            entries.append((raw.decode(), parts[2].decode()))
    if not entries:
        return {}
    request = "".join(f"{sha}\n" for _, sha in entries).encode()
    out = _git(path, ["cat-file", "--batch"], f"{path}@{rev}", request)
    found: dict[str, str] = {}
    cursor = 0
    for member, _ in entries:
        header_end = out.index(b"\n", cursor)
        size = int(out[cursor:header_end].split()[2])
        body = out[header_end + 1 : header_end + 1 + size]
        found[member] = body.decode("utf-8", "replace")
        cursor = header_end + 1 + size + 1
    return found


# --- a clone as upstream history ------------------------------------------------------------

#: Branches whose commits are upstream's lineages: the main line and the release branches.
LINEAGE = re.compile(
    r"""
    ^refs/(?:heads|remotes/[^/]+)/   # a local branch, or one a remote has
    (?P<name>main|master|releases/.+)$
    """,
    re.VERBOSE,
)


def lineages(path: str) -> list[tuple[str, str]]:
    """(branch name, ref) of the clone's main line and release branches, main first, each
    name once (a local branch before a remote's)."""
    out = _git(path, ["for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes"], path)
    found: dict[str, str] = {}
    for ref in out.decode().split():
        matched = LINEAGE.match(ref)
        if matched is not None and matched.group("name") not in found:
            found[matched.group("name")] = ref
    return sorted(found.items(), key=lambda pair: (pair[0] not in ("main", "master"), pair[0]))


#: A release tag: ``v0.19.1rc1``, a ``v`` and a version as the index spells it.
RELEASE_TAG = re.compile(
    r"""
    ^v(?P<version>[0-9]+(?:\.[0-9]+)*   # the release numbers
    (?:(?:a|b|rc)[0-9]+)?               # a pre-release
    (?:\.post[0-9]+)?)$                 # a post release
    """,
    re.VERBOSE,
)


def releases(path: str, held_by: str = "", holding: str = "") -> dict[str, str]:
    """The clone's release tags as version to commit (``0.19.1rc1`` for ``v0.19.1rc1``);
    with ``held_by``, only the tags that commit holds (is, or descends from); with
    ``holding``, only those that hold that commit."""
    fields = "--format=%(refname:short)%00%(objectname)%00%(*objectname)"
    held = [f"--merged={held_by}"] if held_by else []
    held += [f"--contains={holding}"] if holding else []
    out = _git(path, ["for-each-ref", fields, *held, "refs/tags"], path)
    found: dict[str, str] = {}
    for row in out.decode().splitlines():
        name, own, peeled = row.split("\0")
        matched = RELEASE_TAG.match(name)
        if matched is not None:
            found[matched.group("version")] = peeled or own  # an annotated tag: its commit
    return found


def way(
    path: str, base: str, tip: str, member: str, stops: Sequence[str], until: str = ""
) -> list[str]:
    """The commits ``tip`` holds and ``base`` does not that change ``member``, ordered by the
    first of ``stops`` (release commits, in release order) that holds each, then parents
    before children; each stop's commit follows the commits it is the first to hold (also
    when it changes nothing of ``member``). Made up to the day ``until`` when given."""
    seen = [base]
    found: list[str] = []
    for stop in [*stops, tip]:
        args = ["rev-list", "--reverse", "--topo-order", *_until(until), stop]
        excluded = [f"^{c}" for c in seen]
        out = _git(path, [*args, *excluded, "--", member], f"{path}@{base}..{stop}")
        found += out.decode().split()
        if stop != tip and stop not in found:
            found.append(stop)
        seen.append(stop)
    return found


def first_parent(path: str, ref: str, member: str, since: str = "", until: str = "") -> list[str]:
    """The commits on ``ref``'s first-parent line that change ``member``, newest first
    (since the date ``since`` and up to the day ``until``, YYYY-MM-DD, when given)."""
    dates = [*([f"--since={since}"] if since else []), *_until(until)]
    args = ["rev-list", "--first-parent", *dates, ref]
    return _git(path, [*args, "--", member], f"{path}@{ref}").decode().split()


def _until(day: str) -> list[str]:
    """The rev-list option for commits made up to the end of ``day`` (none without it)."""
    return [f"--until={day} 23:59:59"] if day else []


def texts(path: str, commits: Sequence[str], member: str) -> dict[str, str]:
    """``member`` at each of ``commits``, as text, read by one git process (a commit that
    lacks it is left out)."""
    if not commits:
        return {}
    request = "".join(f"{c}:{member}\n" for c in commits).encode()
    out = _git(path, ["cat-file", "--batch"], f"{path}:{member}", request)
    found: dict[str, str] = {}
    cursor = 0
    for commit in commits:
        header_end = out.index(b"\n", cursor)
        header = out[cursor:header_end].split()
        if len(header) < 3 or header[-1] == b"missing":
            cursor = header_end + 1
            continue
        size = int(header[2])
        found[commit] = out[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        cursor = header_end + 1 + size + 1
    return found


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What a note says of an upstream commit."""

    sha: str
    #: YYYY-MM-DD of the commit.
    date: str
    subject: str

    @property
    def pr(self) -> str:
        """The pull request the subject names (``#13946``), "" when it names none."""
        found = re.findall(r"\(#(\d+)\)", self.subject)
        return f"#{found[-1]}" if found else ""


def info(path: str, commit: str) -> CommitInfo:
    """The date and subject of ``commit``."""
    out = _git(path, ["show", "-s", "--format=%H%x00%cs%x00%s", commit], f"{path}@{commit}")
    sha, date, subject = out.decode().strip().split("\0", 2)
    return CommitInfo(sha, date, subject)


def has(path: str, rev: str) -> str:
    """The full hash of the commit ``rev`` names when the clone has it, "" otherwise (an
    abbreviated hash, as a release's ``_version.py`` names its commit)."""
    try:
        return commit(path, rev)
    except BadInput:
        return ""


def on(path: str, commit: str, ref: str) -> bool:
    """Whether ``commit`` is an ancestor of ``ref`` (or is it)."""
    command = ["git", "-C", path, "merge-base", "--is-ancestor", commit, ref]
    return subprocess.run(command, capture_output=True, check=False).returncode == 0
