"""Whether two hunks one release brought to a method are one change (docs/design.md rule 5).

A release is the diff of many commits, and releases alone do not say which of them
brought a hunk. One fact ties two hunks of the same release in one method: both use a
name the release brought into the method, one the method read or bound in no statement
before it (a new call, attribute or local both hunks share). Two commits rarely bring
the same new name to one method; one change that adds a feature in two places always
does (vllm-ascend 0.17.0rc1's pipeline-parallel receive and broadcast in
``sample_tokens``: ``get_pp_group``, both hunks of c377e73933). Names the method already
had tie nothing: every hunk of a method reads ``self`` and its common state.
"""

from __future__ import annotations

from collections.abc import Iterable

from omni_port.model import Stmt
from omni_port.pyast.syntax import full_key, walk
from omni_port.sync.evidence.history import MemberHistory, Version


def brought_names(history: MemberHistory, label: str) -> frozenset[str]:
    """The names the member reads or binds in release ``label`` that it read or bound in
    no statement of the version before it (none when ``label`` is not in history, is
    its first version, or either version lacks the member: then nothing is new to it)."""
    order = [v.label for v in history.versions]
    if label not in order or order.index(label) == 0:
        return frozenset()
    now, before = history.versions[order.index(label)], history.versions[order.index(label) - 1]
    if now.member is None or before.member is None:
        return frozenset()
    return _names(_statements(now)) - _names(_statements(before))


def names_at(version: Version, keys: Iterable[str]) -> frozenset[str]:
    """The names the statements of ``version``'s member with full keys ``keys`` read or
    bind, their bodies' included (none when the member lacks them)."""
    wanted = frozenset(keys)
    return _names(s for s in _statements(version) if full_key(s) in wanted)


def _statements(version: Version) -> Iterable[Stmt]:
    """Every statement of the member, at any depth."""
    if version.member is None or not version.member.clauses:
        return ()
    return (s for _, suite in walk(version.member.clauses[0]) for s in suite.stmts)


def _names(stmts: Iterable[Stmt]) -> frozenset[str]:
    found: set[str] = set()
    for stmt in stmts:
        found |= stmt.reads | stmt.writes
    return frozenset(found)
