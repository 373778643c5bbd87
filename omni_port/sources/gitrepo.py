"""Read files of a local git clone at any revision, without checking anything out.

``PATH@REV`` specs read through ``git show`` and ``git cat-file``: the working tree of the
clone is never touched, so a maintainer's checkout stays as it is.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

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
    """The bytes of ``member`` (relative to the clone's directory) at ``rev``."""
    return _git(path, ["show", f"{rev}:./{member}"], f"{path}@{rev}/{member}")


def commit(path: str, rev: str) -> str:
    """The full hash of the commit ``rev`` names."""
    out = _git(path, ["rev-parse", "--verify", f"{rev}^{{commit}}"], f"{path}@{rev}")
    return out.decode().strip()


def commits_touching(path: str, since: str, until: str, member: str, limit: int) -> list[str]:
    """Commits after ``since`` up to ``until`` that change ``member``, oldest first."""
    out = _git(
        path,
        ["rev-list", "--reverse", f"--max-count={limit}", f"{since}..{until}", "--", member],
        f"{path}@{since}..{until}",
    )
    return out.decode().split()


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
    tags = _git(path, ["tag", "--points-at", commit], f"{path}@{commit}").decode().split()
    return f"{path}@{sorted(tags)[0] if tags else commit[:12]}"


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
