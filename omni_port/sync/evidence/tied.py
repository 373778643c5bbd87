"""Whether two hunks one release brought to a method are one change (docs/design.md rule 5).

A release is the diff of many commits, and releases alone do not say which of them
brought a hunk. One fact ties two hunks of the same release in one method: both use a
name of the method's own scope or module that the release brought into the method, one
it read or bound in no statement before (a local one hunk binds and the other reads, a
function both newly call). Two commits rarely bring the same such name to one method;
one change that adds a feature in two places does (vllm-ascend 0.17.0rc1's
pipeline-parallel receive and broadcast in ``sample_tokens``: ``get_pp_group``, both
hunks of c377e73933). Names tie nothing where any code may read them: a builtin, or the
instance's state (``self.x``: vLLM 0.15.0's mamba align mode and its encoder-only KV
update each start reading ``self.kv_cache_config`` in ``execute_model``), and nor do
names the method already had.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from omni_port.model import Stmt
from omni_port.pyast.syntax import full_key, walk
from omni_port.sync.evidence.history import MemberHistory, Version

#: Names every scope reads without binding them.
_BUILTINS = frozenset(dir(builtins))


def brought_names(history: MemberHistory, label: str) -> frozenset[str]:
    """The names of the member's scope or module (no builtin, no ``self.x``) it reads or
    binds in release ``label`` and read or bound in no statement of the version before
    it (none when ``label`` is not in history, is its first version, or either version
    lacks the member: then nothing is new to it)."""
    order = [v.label for v in history.versions]
    if label not in order or order.index(label) == 0:
        return frozenset()
    now, before = history.versions[order.index(label)], history.versions[order.index(label) - 1]
    if now.member is None or before.member is None:
        return frozenset()
    new = _names(_statements(now)) - _names(_statements(before))
    return frozenset(n for n in new if not n.startswith("self.") and n not in _BUILTINS)


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
