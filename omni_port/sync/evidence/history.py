"""Upstream history: what the releases around an upgrade say about an unmarked edit.

Evidence, worked out from the releases the sources stage loaded (each copied member
parsed on its own, ``Release.members``); nothing here reads a file.

The runners are rarely copied from exactly one release. An unmarked edit whose text some
upstream release holds at the edit's place is upstream code, not an omni edit:

- drift, when that release is newer than the base: omni took upstream code early;
- a lag, when it is older: upstream changed the code later and the runners never got it.

Either way the output follows the new upstream there, and the release is recorded (for a
lag, also the release that brought the change). An edit that an older or newer release
explains better than the base, without holding it exactly, is merged against that
release's text instead of the base's (``merge_base``): the part upstream changed since
then is upstream's, the rest is omni's.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace

from omni_port.errors import BadInput
from omni_port.extract.blocks import CONTEXT, edge_of
from omni_port.model import Anchor, Block, BlockKind, Release, Stmt, Suite, Tree
from omni_port.pyast.diff import similarity
from omni_port.pyast.merge3 import written_against
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import (
    dedent_code,
    find_def,
    first_line,
    full_key,
    is_compound,
    node_key,
    split_full_key,
    walk,
)
from omni_port.sync.evidence.code import short, with_body
from omni_port.sync.evidence.flow import flow
from omni_port.sync.evidence.places import (
    PATH_FUZZY,
    Scored,
    Slot,
    clear_place,
    index_of,
    path_score,
    wrapped,
)


@dataclass(frozen=True, slots=True)
class Version:
    """One upstream release (or commit) and the member in it."""

    #: ``vllm-ascend==0.21.0rc1``, or ``path@rev`` for a commit of a clone.
    label: str
    tree: Tree
    #: The member in this release (None when the release lacks it).
    member: Stmt | None
    #: The label with what a commit says of itself, for notes (the label for a release).
    name: str = ""
    #: The member's bodies as the history evidence reads them, worked out once per version
    #: (every block asks every release for its place, often twice).
    bodies: dict[Hashable, list[tuple[Suite, list[str]]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    keys: dict[bool, list[tuple[str, ...]]] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class MemberHistory:
    """One member across upstream history, oldest first (equal only to itself)."""

    versions: tuple[Version, ...]
    #: Position of the release the blocks were extracted against.
    base: int
    #: Position of the new upstream.
    target: int


def member_history(
    releases: Sequence[Release], base: str, target: Release, target_tree: Tree, key: MemberKey
) -> MemberHistory | None:
    """The member ``key`` across ``releases`` (oldest first; the target is added when missing),
    or None when the base is not among them. Each release other than the target gives
    the member as the sources stage parsed it (``Release.members``)."""
    labels = [r.label for r in releases]
    if base not in labels:
        return None
    owner, name = key
    ordered = list(releases) if target.label in labels else [*releases, target]
    versions = []
    for release in ordered:
        if release.label == target.label:
            found = _find(target_tree, owner, name)
            versions.append(Version(release.label, target_tree, found, name=release.named))
        else:
            tree = release.members.get(key)
            found = _find(tree, "", name) if tree is not None else None
            versions.append(Version(release.label, tree or target_tree, found, name=release.named))
    order = [v.label for v in versions]
    return MemberHistory(tuple(versions), order.index(base), order.index(target.label))


#: A copied member by name: (the upstream class it is in, "" at module level; its name).
MemberKey = tuple[str, str]


def _find(tree: Tree, owner: str, name: str) -> Stmt | None:
    if not owner:
        return find_def(tree.body, name)
    cls = find_def(tree.body, owner)
    return find_def(cls.clauses[0], name) if cls is not None and cls.clauses else None


@dataclass(frozen=True, slots=True)
class Explained:
    """An unmarked edit that is upstream code."""

    #: The release that holds the edit's text.
    release: str
    #: The runners lagged: upstream changed the code after ``release``, in ``brought_by``.
    lag: bool
    brought_by: str
    #: Full keys of the new upstream's statements at the edit's place.
    target_span: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class Rebase:
    """The release an unmarked edit was written against, other than the base."""

    label: str
    #: That release's code at the edit's place.
    text: str


@dataclass(frozen=True, slots=True)
class Place:
    """Statements of one version between an edit's old neighbours."""

    suite: Suite
    start: int
    stop: int

    def stmts(self) -> tuple[Stmt, ...]:
        return self.suite.stmts[self.start : self.stop]

    def keys(self) -> tuple[str, ...]:
        return tuple(full_key(s) for s in self.stmts())


def place(version: Version, anchor: Anchor, fuzzy: bool = False) -> Place | None:
    """The statements between an anchor's nearest neighbours in ``version``'s member, in
    the one body that has them (None when no body or several bodies do, or the version
    lacks the member).

    ``fuzzy``: when no body has the neighbours as they were, a neighbour upstream edited
    a little (``NEIGHBOUR`` alike) stands in for it, as long as one place is found."""
    if version.member is None:
        return None
    found = _places(version, anchor, lambda a, b: a == b)
    if not found and fuzzy:
        found = _places(version, anchor, lambda a, b: similarity(a, b) >= NEIGHBOUR)
    return found[0] if len(found) == 1 else None


#: Least similarity for an edited statement to stand in for an old neighbour.
NEIGHBOUR = 0.9


def _places(version: Version, anchor: Anchor, same: Callable[[str, str], bool]) -> list[Place]:
    """The places on a path close to the anchor's; only without any, those in the same
    compound statement's body wrapped differently (``_rewrapped``)."""
    found = _places_in(_bodies_along(version, anchor.path, False), anchor, same)
    return found or _places_in(_bodies_along(version, anchor.path, True), anchor, same)


def _places_in(
    bodies: list[tuple[Suite, list[str]]], anchor: Anchor, same: Callable[[str, str], bool]
) -> list[Place]:
    found: list[Place] = []
    for suite, keys in bodies:
        starts = (
            [i + 1 for i, k in enumerate(keys) if same(k, anchor.before[0])]
            if anchor.before
            else [0]
        )
        stops = (
            [i for i, k in enumerate(keys) if same(k, anchor.after[0])]
            if anchor.after
            else [len(keys)]
        )
        pairs = [(a, b) for a in starts for b in stops if a <= b]
        found.extend(Place(suite, a, b) for a, b in pairs)
    return found


def _bodies_along(
    version: Version, path: tuple[str, ...], rewrapped: bool
) -> list[tuple[Suite, list[str]]]:
    """The bodies of ``version``'s member on a path close enough to ``path``
    (``rewrapped``: the bodies of its last compound statement wrapped differently
    instead), with their statement keys. Kept in the version: every block asks every
    release for its place, often twice, and walking the member and scoring the paths each
    time cost more than the rest of the history evidence."""
    key = (path, rewrapped)
    found = version.bodies.get(key)
    if found is not None:
        return found
    assert version.member is not None
    along = [
        (suite, [s.key for s in suite.stmts])
        for inner, suite in walk(version.member.clauses[0])
        if (_rewrapped(path, inner) if rewrapped else path_score(path, inner) >= PATH_FUZZY)
    ]
    version.bodies[key] = along
    return along


def _rewrapped(path: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """Whether ``other`` is the body of the same compound statement as ``path``, with
    compound statements wrapped around it on one side only: a release from before
    upstream wrapped the code in a new ``with`` (or after it unwrapped one)."""
    if not path or not other or path[-1] != other[-1]:
        return False
    return wrapped(other, path) or wrapped(path, other)


def code_keys(code: str) -> tuple[str, ...] | None:
    """Full keys of the statements of a block's code (None when it does not parse).

    Simple statements are keyed from ``ast`` alone (statements a ``;`` joins share a key,
    as in a statement tree); only compound ones, whose keys hold a fingerprint of their
    bodies, need the full statement tree (and libcst)."""
    try:
        nodes = ast.parse(dedent_code(code)).body
    except (SyntaxError, ValueError):
        return None
    if any(is_compound(node) for node in nodes):
        try:
            tree = parse(dedent_code(code), "<block>")
        except BadInput:
            return None
        return tuple(full_key(s) for s in tree.body.stmts)
    return _line_keys(nodes)


def _line_keys(nodes: Sequence[ast.stmt]) -> tuple[str, ...]:
    """The keys a statement tree gives ``nodes``: a compound statement by its header, and
    statements a ``;`` joins sharing one key."""
    keys: list[str] = []
    end = 0
    for node in nodes:
        if keys and node.lineno == end:  # `a; b`: one statement line
            keys[-1] += "; " + node_key(node)
        else:
            keys.append(node_key(node))
        end = node.end_lineno or node.lineno
    return tuple(keys)


def _verified(history: MemberHistory, block: Block) -> bool:
    """The base holds the edit's replaced statements at the place: the place is right."""
    found = place(history.versions[history.base], block.anchor)
    return found is not None and found.keys() == block.anchor.replaced


def _could_be(first: str | None, keys: tuple[str, ...] | None) -> bool:
    """A necessary condition for ``code_keys(code) == keys`` read with ``ast`` alone:
    ``first``, the first statement's key (``_first_key``), starts the first key. It spares
    the full parse (and loading libcst) for the many edits no release holds."""
    if keys is None:
        return False
    if first is None:
        return True  # the full parse decides
    if not first or not keys:
        return not first and not keys
    head = split_full_key(keys[0])[0]
    return head == first or head.startswith(first + "; ")


def _first_key(code: str) -> str | None:
    """The key of the first statement of ``code`` as ``ast`` reads it ("" for none, None
    when ``ast`` cannot read it)."""
    try:
        nodes = ast.parse(dedent_code(code)).body
    except SyntaxError:
        return None
    if not nodes:
        return ""
    return node_key(nodes[0])


def explain(block: Block, history: MemberHistory) -> Explained | None:
    """The release whose text at the edit's place is the edit's own text, if one is."""
    if not _verified(history, block):
        return None
    others = [
        (i, _keys_at(version, block.anchor))
        for i, version in enumerate(history.versions)
        if i != history.base
    ]
    first = _first_key(block.code)
    if not any(_could_be(first, keys) for _, keys in others):
        return None
    mine = code_keys(block.code)
    if mine is None:
        return None
    holders = [i for i, keys in others if keys == mine]
    if not holders:
        return None
    target = history.versions[history.target]
    span = _keys_at(target, block.anchor) or ()
    if history.target in holders:
        return Explained(target.label, False, "", span, "upstream made the same change")
    theirs = _quoted(tuple(split_full_key(k)[0] for k in block.anchor.replaced))
    older = [i for i in holders if i < history.base]
    if older:
        holder = older[-1]
        brought = next(
            (v.label for v in history.versions[holder + 1 :] if _keys_at(v, block.anchor) != mine),
            history.versions[history.base].label,
        )
        held = history.versions[holder].label
        was, came = named(history, held), named(history, brought)
        if mine:
            into = _into(block, history, brought) or f"into `{theirs}`"
            what = f"`{_quoted(mine)}` is the code of {was}, which {came} changed {into}"
            reason = f"an upstream change the runners never had: {what}"
        else:
            heads = [split_full_key(k)[0] for k in block.anchor.replaced]
            items = brought_here(history, heads, block.anchor.path, holder + 1)
            which = which_brought(items, lambda label: named(history, label))
            reason = (
                f"upstream code the runners never had: {which} ({was} had the runners' code here)"
            )
        return Explained(held, True, brought, span, f"{reason}; the new upstream is followed")
    held = history.versions[holders[0]].label
    was = named(history, held)
    code = f"`{_quoted(mine)}` is the code of {was}" if mine else f"{was} has no `{theirs}` here"
    reason = f"upstream drift: {code}, newer than the base; the new upstream is followed"
    return Explained(held, False, "", span, reason)


def _into(block: Block, history: MemberHistory, label: str) -> str:
    """What the change ``label`` made of the edit's code at its place, for a note
    (``changed_at``); "" when the edit's code does not parse."""
    try:
        old = parse(dedent_code(block.code), "<block>").body.stmts
    except BadInput:
        return ""
    return changed_at(history, label, block.anchor, old)


def changed_at(history: MemberHistory, label: str, anchor: Anchor, old: Sequence[Stmt]) -> str:
    """What the version ``label`` made of the statements ``old`` at the anchor's place, for a
    note after "changed" (``what_changed``); "" when that version has no such place."""
    version = next((v for v in history.versions if v.label == label), None)
    found = place(version, anchor, fuzzy=True) if version is not None else None
    return what_changed(old, found.stmts()) if found is not None else ""


def what_changed(old: Sequence[Stmt], new: Sequence[Stmt]) -> str:
    """What a change made of the statements ``old`` (they became ``new``), for a note
    after "changed": "into `b`"; where their own text stayed and only a compound
    statement's body changed, what changed there ("in its body: `x` into `y`"), since
    "`if a:` changed into `if a:`" tells a reader nothing."""
    if [s.key for s in old] != [s.key for s in new]:
        return f"into `{_quoted([s.key for s in new])}`"
    was, now = Counter(_nested(old)), Counter(_nested(new))
    gone, came = list((was - now).elements()), list((now - was).elements())
    its = "its body" if len(old) == 1 else "their bodies"
    if gone and came:
        return f"in {its}: `{_quoted(gone)}` into `{_quoted(came)}`"
    if came:
        return f"in {its}, bringing `{_quoted(came)}`"
    if gone:
        return f"in {its}, taking out `{_quoted(gone)}`"
    return f"the order of the statements in {its}"


def _nested(stmts: Sequence[Stmt]) -> list[str]:
    """The own keys of every statement nested in ``stmts``' bodies, in order."""
    return [
        inner.key
        for stmt in stmts
        for clause in stmt.clauses
        for _, suite in walk(clause)
        for inner in suite.stmts
    ]


def _quoted(keys: Sequence[str], limit: int = 80) -> str:
    """Statements for a note, shortened: the code the reader looks for."""
    return short("; ".join(split_full_key(k)[0] for k in keys), limit)


def held_in_member(block: Block, history: MemberHistory) -> Explained | None:
    """An unmarked edit whose code the base's member lacks and another release's member
    holds, as a run of statements of one body wherever it stands there: that release's
    upstream code (drift when newer than the base, a lag when older), not omni's.

    A hand port copies a method from one revision and hunks of it from others: the place
    a hunk had in its own revision is often gone from the base, so ``explain`` (which
    looks at the edit's place) cannot see it. Code the base already holds elsewhere is a
    move of omni's, never evidence."""
    if block.marked or not block.code.strip() or not _first_held(block, history):
        return None
    mine = _run_of(block)
    header = block.kind is BlockKind.HEADER
    base = history.versions[history.base]
    if not mine or base.member is None or _holds_run(base, mine, header):
        return None
    holders = [
        i
        for i, v in enumerate(history.versions)
        if i != history.base and v.member is not None and _holds_run(v, mine, header)
    ]
    if not holders:
        return None
    target = history.versions[history.target]
    span = _keys_at(target, block.anchor) or ()
    quoted = _quoted(mine)
    if history.target in holders:
        # The new upstream's run of the edit's statements stands for it (where the anchor's
        # place is gone): a row can name its lines.
        standing = span or (() if header else mine)
        return Explained(target.label, False, "", standing, "upstream made the same change")
    older = [i for i in holders if i < history.base]
    if older:
        holder = older[-1]
        brought = next(
            (
                v.label
                for v in history.versions[holder + 1 :]
                if v.member is None or not _holds_run(v, mine, header)
            ),
            base.label,
        )
        held = history.versions[holder].label
        reason = (
            f"an upstream change the runners never had: `{quoted}` is the code of "
            f"{named(history, held)}, which {named(history, brought)} changed; the new "
            "upstream is followed"
        )
        return Explained(held, True, brought, span, reason)
    held = history.versions[holders[0]].label
    reason = (
        f"upstream drift: `{quoted}` is the code of {named(history, held)}, newer than the "
        "base; the new upstream is followed"
    )
    return Explained(held, False, "", span, reason)


def _first_held(block: Block, history: MemberHistory) -> bool:
    """A necessary condition for ``held_in_member`` read with ``ast`` alone: some release
    other than the base holds the edit's statements as a run, compared by their own keys
    (a compound statement by its header). It spares the full parse of the edit's code
    (and loading libcst) for the many edits no release holds."""
    own = _own_keys(block.code)
    if own is None:
        return True  # the full parse decides
    return bool(own) and any(
        _has_run(body, own)
        for i, version in enumerate(history.versions)
        if i != history.base and version.member is not None
        for body in _body_keys(version, True)
    )


def _own_keys(code: str) -> tuple[str, ...] | None:
    """The own keys of ``code``'s statements, as a statement tree gives them, read with
    ``ast`` (None when ``ast`` cannot read it)."""
    try:
        return _line_keys(ast.parse(dedent_code(code)).body)
    except (SyntaxError, ValueError):
        return None


def _run_of(block: Block) -> tuple[str, ...]:
    """The keys an edit's code is looked for by: its statements' full keys, or a
    compound header's own key."""
    if block.kind is BlockKind.HEADER:
        keys = code_keys(with_body(block.code))
        return tuple(split_full_key(k)[0] for k in keys) if keys else ()
    return code_keys(block.code) or ()


def _holds_run(version: Version, keys: tuple[str, ...], header: bool) -> bool:
    """Whether one body of ``version``'s member holds ``keys`` as consecutive statements
    (compared by full key; a header by its own key)."""
    return any(_has_run(found, keys) for found in _body_keys(version, header))


def _has_run(body: tuple[str, ...], keys: tuple[str, ...]) -> bool:
    """Whether ``body`` holds ``keys`` as consecutive entries."""
    width = len(keys)
    return keys[0] in body and any(
        body[i : i + width] == keys for i in range(len(body) - width + 1)
    )


def _body_keys(version: Version, header: bool) -> list[tuple[str, ...]]:
    """The keys of every body of ``version``'s member, statement by statement (full keys,
    or each statement's own key for ``header``), kept in the version: every edit of a
    member asks them of every release."""
    found = version.keys.get(header)
    if found is not None:
        return found
    assert version.member is not None
    bodies = [
        tuple(s.key if header else full_key(s) for s in suite.stmts)
        for _, suite in walk(version.member.clauses[0])
    ]
    version.keys[header] = bodies
    return bodies


def never_without(block: Block, history: MemberHistory) -> bool:
    """Whether no release before the base had the runner's text where a deletion is: every
    release that has the place holds statements there, so nothing shows the statements
    to be a later arrival the copy missed. Omni deleted them."""
    if not _verified(history, block):
        return False
    found = [_keys_at(v, block.anchor) for v in history.versions[: history.base]]
    return all(keys for keys in found if keys is not None)


@dataclass(frozen=True, slots=True)
class Unordered:
    """Statements an unmarked edit deletes that arrived at its place with the
    runner's text there, in one release: releases alone cannot order the two (rule 7)."""

    #: The release that brought both (a diff of many commits).
    release: str
    #: The own keys of the deleted statements it brought, in the deletion's order.
    heads: tuple[str, ...]

    def among(self, stmts: Sequence[Stmt]) -> bool:
        """Whether one of ``stmts`` is one of these statements (upstream may have edited it
        since, as the anchor tells one statement edited from another): where none is,
        omni's deletion and the runners' lag give the same output, and the order does
        not matter."""
        return any(
            stmt.key == head or similarity(stmt.key, head) >= HAD
            for stmt in stmts
            for head in self.heads
        )


def unordered(
    block: Block, history: MemberHistory, omni: frozenset[str] = frozenset()
) -> Unordered | None:
    """The release that brought both the runner's text at an unmarked edit's place and
    statements it deletes there (all an unmarked deletion replaces; of an unmarked
    replacement, those its code holds nothing like), when that is a release, not a
    commit (None otherwise, or when the runner's text there is older than history).

    Rule 1 keeps a deletion omni's only when no revision had the runner's text there
    without the deleted code. Code that stood before the runner's text arrived around it
    proves that, and code that arrived after it is a lag (``explain``); with both in one
    release delta, a commit between them may have had the text without the code, which
    only a clone can tell. One commit bringing both proves it omni's. The runner's text
    is dated as ``never_had`` dates it: by the newest arrival of its statements right
    beside the place and of the edit's own code, but a statement keyed in ``omni`` (one
    a marked block holds) dates nothing."""
    kinds = (BlockKind.DELETION, BlockKind.REPLACEMENT)
    if block.marked or block.kind not in kinds or not _verified(history, block):
        return None
    found = place(history.versions[history.base], block.anchor)
    mine = every_key(block.code)
    if found is None or mine is None:
        return None
    path = block.anchor.path
    near = (*block.anchor.before[:1], *block.anchor.after[:1])
    heads = (*sorted(mine), *(split_full_key(k)[0] for k in near))
    since = max((_arrival(history, h, path) or 0 for h in heads if h not in omni), default=0)
    if not since or is_commit(history, history.versions[since].label):
        return None
    binds = _binds(block.code)
    # A statement omni's code holds, edited or not, or binds the names of, is one omni
    # had and changed (as ``never_had`` reads it): not deleted.
    deleted = [
        stmt.key
        for stmt in found.stmts()
        if not any(similarity(stmt.key, key) >= HAD for key in mine) and not stmt.writes & binds
    ]
    came = tuple(h for h in deleted if _arrival(history, h, path) == since)
    return Unordered(history.versions[since].label, came) if came else None


def changed_by(block: Block, history: MemberHistory) -> str:
    """The first release (or commit) after the base that changed the statements the block
    replaced at its place ("" when none did, or the base does not hold them).

    Where the place's neighbours are not upstream's as they stand (an edit of omni's own
    beside the block), the statements are looked for as a run in any body of the member:
    the first release without them is the change."""
    replaced = block.anchor.replaced
    if not replaced:
        return ""
    later = history.versions[history.base + 1 : history.target + 1]
    if _verified(history, block):
        return next((v.label for v in later if _keys_at(v, block.anchor) != replaced), "")
    header = block.kind is BlockKind.HEADER
    if not _holds_run(history.versions[history.base], replaced, header):
        return ""
    return next(
        (v.label for v in later if v.member is None or not _holds_run(v, replaced, header)), ""
    )


def place_changed_by(block: Block, history: MemberHistory) -> str:
    """The first release (or commit) after the base whose member does not hold the block's
    place as the base does: upstream put code between its neighbours, or changed what it
    replaced there ("" when none did, or the base does not hold the place). An insertion
    replaces nothing, so ``changed_by`` has nothing to date; this dates the change of its
    place, which is what a conflict over it is about."""
    if not _verified(history, block):
        return ""
    later = history.versions[history.base + 1 : history.target + 1]
    replaced = block.anchor.replaced
    return next((v.label for v in later if _keys_at(v, block.anchor) != replaced), "")


def moved_only(block: Block, history: MemberHistory) -> bool:
    """Whether upstream changed only the place of the statements the block replaced: a
    release after the base changed them there (``changed_by``), and every later one up to
    the new upstream still holds them, unedited, as a run of one body."""
    if not changed_by(block, history):
        return False
    header = block.kind is BlockKind.HEADER
    later = history.versions[history.base + 1 : history.target + 1]
    replaced = block.anchor.replaced
    return all(v.member is not None and _holds_run(v, replaced, header) for v in later)


def edited_by(block: Block, history: MemberHistory) -> str:
    """The first release (or commit) after the base that changed the text of the statements
    the block replaced, not only their place: from the change at their place
    (``changed_by``) on, the first whose member holds them as a run in no body (keys read
    through the syntax tree: a change that wrapped them in a ``with`` or moved them is no
    edit); the change at their place when every later version holds them somewhere."""
    moved = changed_by(block, history)
    if not moved:
        return ""
    header = block.kind is BlockKind.HEADER
    later = history.versions[history.base + 1 : history.target + 1]
    start = next(i for i, v in enumerate(later) if v.label == moved)
    replaced = block.anchor.replaced
    return next(
        (v.label for v in later[start:] if v.member is None or not _holds_run(v, replaced, header)),
        moved,
    )


def arrived_in(block: Block, history: MemberHistory) -> str:
    """The release (or commit) that brought the statements the block replaced to its place:
    the newest of their arrivals there, each statement's the oldest version of the run up
    to the base whose body at the place holds its text ("" when the base does not hold
    them there, or every one is older than history).

    Provenance is per place and per statement (rule 4): a neighbour that came later, or a
    later change of a compound statement's body, did not bring the statement (a compound
    one is dated by its header, as its body's statements are by themselves)."""
    if not block.anchor.replaced or not _verified(history, block):
        return ""
    path = block.anchor.path
    heads = [split_full_key(k)[0] for k in block.anchor.replaced]
    newest = max((_arrival(history, h, path, edited=False) or 0 for h in heads), default=0)
    return history.versions[newest].label if newest > 0 else ""


def is_commit(history: MemberHistory, label: str) -> bool:
    """Whether ``label`` is a commit of a clone (what it names says more than its label),
    not a release: one upstream change, not the diff between two releases."""
    return any(v.label == label and v.name and v.name != v.label for v in history.versions)


def named(history: MemberHistory, label: str) -> str:
    """The release ``label``, or the commit with its hash, subject and pull request."""
    found = next((v.name for v in history.versions if v.label == label and v.name), "")
    return found or label


def older_than_base(history: MemberHistory, label: str) -> bool:
    """Whether the release ``label`` comes before the base in ``history``."""
    order = [v.label for v in history.versions]
    return label in order and order.index(label) < history.base


def _keys_at(version: Version, anchor: Anchor) -> tuple[str, ...] | None:
    found = place(version, anchor, fuzzy=True)
    return found.keys() if found is not None else None


def base_text(block: Block, history: MemberHistory) -> str | None:
    """The base release's code of the statements an edit replaced (None when unknown)."""
    if not _verified(history, block):
        return None
    base = history.versions[history.base]
    found = place(base, block.anchor)
    return _text(base.tree, found.stmts()) if found is not None else None


def merge_base(block: Block, history: MemberHistory) -> Rebase | None:
    """The older release (label, its code at the edit's place) an unmarked edit was
    written against, when that is not the base; None when the base explains it.

    omni's code was written against an older release there when upstream's changes from
    that release to the base merge cleanly into omni's code, and omni's code lacks them
    (``written_against``). Of such releases the newest is taken.
    """
    if block.marked or not _verified(history, block):
        return None
    base = history.versions[history.base]
    base_place = place(base, block.anchor)
    if base_place is None:
        return None
    base_code = _text(base.tree, base_place.stmts())
    for version in reversed(history.versions[: history.base]):
        at = place(version, block.anchor)
        if at is None:
            continue
        text = _text(version.tree, at.stmts())
        if written_against(text, block.code, base_code):
            return Rebase(version.label, text)
    return None


def _text(tree: Tree, stmts: Sequence[Stmt]) -> str:
    if not stmts:
        return ""
    return dedent_code(tree.text(stmts[0].start, stmts[-1].end))


# --- what the runners had at a place ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NeverHad:
    """Statements a block replaces or deletes that the runners never had at its place.

    A hand port copies hunks of several upstream revisions: at one place the runner's text
    dates from the change that brought the newest upstream statement the runner holds
    there (in an unmarked edit's code or right beside it; a marked block's code is omni's
    and dates nothing). A replaced statement that arrived with that change or after it was
    never the runners' to replace: upstream code they lack (docs/design.md, rules 4 and
    5), kept as upstream has it. (Even with a clone, "with that change" stays: a statement
    arrives where the body at its path first holds it, and the change that wrapped the
    body in a new statement brings all of it.)"""

    #: Their statement keys (a compound statement by its header).
    keys: frozenset[str]
    #: The release that brought the newest of them, and the one before it (without them).
    brought_by: str
    had: str
    #: The runner's own statement that dates its text there ("" when its text there is
    #: older than history), and the release it came in.
    runners: str
    since: str

    def holds(self, key: str) -> bool:
        """Whether the statement keyed ``key`` is one of them (upstream may have edited it
        since, as the anchor tells one statement edited from another)."""
        return key in self.keys or any(similarity(key, k) >= HAD for k in self.keys)

    def quoted(self, replaced: Sequence[str]) -> str:
        """The statements, in the order the block replaced them, for a note."""
        return _quoted(self.heads(replaced))

    def heads(self, replaced: Sequence[str]) -> list[str]:
        """The keys of these statements, in the order the block replaced them."""
        return [h for k in replaced if (h := split_full_key(k)[0]) in self.keys]

    def standing(self, replaced: Sequence[str], held: Sequence[Stmt]) -> list[str]:
        """The keys of ``replaced`` (what the block replaced) that are these statements and
        that the new upstream still has among ``held`` (its statements at the block's
        place, perhaps edited)."""
        keys = {s.key for s in held}
        return [
            k
            for k in replaced
            if (h := split_full_key(k)[0]) in self.keys
            and (h in keys or any(similarity(h, other) >= HAD for other in keys))
        ]

    def note(
        self,
        replaced: Sequence[str],
        held: Sequence[Stmt],
        named: Callable[[str], str],
        more: str = "",
        brought: Callable[[Sequence[str]], Sequence[Brought]] = lambda heads: (),
    ) -> str:
        """The note on these statements among ``replaced`` (what the block replaced): the
        ones the new upstream still has among ``held`` (its statements at the block's
        place) stay; when it has none of them, it took them out too, and the note says so.
        Names the changes with ``named`` (each statement's when ``brought``, given their
        keys, knows it); ``more`` goes inside its closing parenthesis.

        What the note says stays is what the output holds, whichever rule words it."""
        standing = self.standing(replaced, held)
        said = standing or replaced
        items = brought(self.heads(said))
        which = (
            which_brought(items, named)
            if items
            else f"`{self.quoted(said)}`, which {named(self.brought_by)} brought"
        )
        fate = "stays" if standing else "is gone from the new upstream too"
        return (
            f"upstream code the runners never had here {fate}: {which} ({named(self.had)} "
            f"had the runners' code here{more})"
        )

    def outside(self, slot: Slot) -> Slot | None:
        """``slot`` less these statements (as upstream may have edited them since) at
        either end of it; None when one of them stands between statements it keeps."""
        held = slot.held()
        start, stop = 0, len(held)
        while start < stop and self.holds(held[start].key):
            start += 1
        while stop > start and self.holds(held[stop - 1].key):
            stop -= 1
        if any(self.holds(s.key) for s in held[start:stop]):
            return None
        return Slot(slot.suite, slot.path, slot.index + start, stop - start)

    def dropped(self, text: str) -> str:
        """``text`` (the code of statements) less these statements: what the runners had
        there, the base of a merge of omni's code (``text`` when it does not parse)."""
        try:
            body = ast.parse(dedent_code(text)).body
        except (SyntaxError, ValueError):
            return text
        lines = dedent_code(text).splitlines(keepends=True)
        gone = {
            line
            for node in body
            if self.holds(node_key(node))
            for line in range(first_line(node), (node.end_lineno or node.lineno) + 1)
        }
        return "".join(line for number, line in enumerate(lines, 1) if number not in gone)


def never_had(
    block: Block, history: MemberHistory, omni: frozenset[str] = frozenset()
) -> NeverHad | None:
    """The statements ``block`` replaces that the runners never had at its place (None when
    it replaces none, or nothing dates the runner's text there). A statement keyed in
    ``omni`` is one a marked block holds (in any runner): omni's code, which dates nothing."""
    if not block.anchor.replaced or not _verified(history, block):
        return None
    mine = every_key(block.code)
    found = place(history.versions[history.base], block.anchor)
    if mine is None or found is None:
        return None
    binds = _binds(block.code)
    near = (*block.anchor.before[:1], *block.anchor.after[:1])
    path = block.anchor.path
    # A marked block's code is omni's: it may hold a later upstream change's code, picked
    # into older text, so only the runner's text around it dates the place, as around a
    # deletion; where that text is older than history, all history came after it.
    own = () if block.marked else sorted(mine)
    heads = (*own, *(split_full_key(k)[0] for k in near))
    runners = [(h, _arrival(history, h, path)) for h in heads if h not in omni]
    # A statement the oldest release already had dates nothing: it may be older still.
    dated = [(h, at) for h, at in runners if at]
    if not dated and not block.marked:
        return None
    runner, since = max(dated, key=lambda pair: pair[1], default=("", 0))
    arrived = [
        (stmt.key, at)
        for stmt in found.stmts()
        # A statement omni's code holds, edited or not, or binds the names of, is one omni
        # had and changed.
        if not any(similarity(stmt.key, key) >= HAD for key in mine) and not stmt.writes & binds
        for at in [_arrival(history, stmt.key, path)]
        if at is not None and at > 0 and at >= since
    ]
    if not arrived:
        return None
    newest = max(at for _, at in arrived)
    versions = history.versions
    return NeverHad(
        frozenset(h for h, _ in arrived),
        versions[newest].label,
        versions[newest - 1].label,
        runner,
        versions[since].label,
    )


#: Least similarity of a statement of omni's code to a replaced one for omni to have had it.
HAD = 0.6


def every_key(code: str) -> frozenset[str] | None:
    """The keys of every statement of ``code``, nested ones included (a compound one by its
    header); None when it does not parse."""
    try:
        tree = ast.parse(dedent_code(code))
    except (SyntaxError, ValueError):
        return None
    return frozenset(node_key(n) for n in ast.walk(tree) if isinstance(n, ast.stmt))


def _binds(code: str) -> frozenset[str]:
    """The names ``code`` binds (none when it does not parse)."""
    try:
        return flow(ast.parse(dedent_code(code)).body).writes
    except (SyntaxError, ValueError):
        return frozenset()


def _arrival(
    history: MemberHistory,
    head: str,
    path: tuple[str, ...],
    upto: int | None = None,
    edited: bool = True,
) -> int | None:
    """The position of the oldest release from which on, up to the base (or ``upto``), the
    body at ``path`` holds the statement keyed ``head`` (a compound one by its header;
    with ``edited``, edited a little, as the anchor tells one statement edited from
    another) in every release that has the member; None when the base (``upto``) lacks it
    there."""
    found = None
    for position in range(history.base if upto is None else upto, -1, -1):
        version = history.versions[position]
        if version.member is None:
            continue
        if not _held_at(version, head, path, edited):
            break
        found = position
    return found


def lag_run(
    history: MemberHistory, code: str, release: str, stmts: Sequence[Stmt], path: tuple[str, ...]
) -> int:
    """How many of the new upstream's ``stmts`` (in the body at ``path``, nearest to an
    edit first) are the new
    upstream's version of the edit's ``code`` (an older ``release``'s, which the runners
    lag behind) or came with it: up to the last statement like one of the code's, each
    one of those or one ``release``'s member lacks (not even edited a little). 0 when
    none is like the code's."""
    mine = code_keys(code)
    version = next((v for v in history.versions if v.label == release), None)
    if not mine or not stmts or version is None or version.member is None:
        return 0
    heads = [split_full_key(k)[0] for k in mine]
    keys = {k for _, body in _bodies_along(version, path, False) for k in body}
    taken = 0
    for count, stmt in enumerate(stmts, 1):
        if any(similarity(stmt.key, h) >= HAD for h in heads):
            taken = count
        elif stmt.key in keys or any(similarity(stmt.key, k) >= HAD for k in keys):
            break
    return taken


def like_code(code: str, stmts: Sequence[Stmt]) -> Stmt | None:
    """The first of ``stmts`` like one of ``code``'s statements (the new upstream's version
    of it, edited a little), None when none is."""
    heads = [split_full_key(k)[0] for k in code_keys(code) or ()]
    return next((s for s in stmts if any(similarity(s.key, h) >= HAD for h in heads)), None)


# --- a block followed release by release ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Walked:
    """Where a block followed through upstream history lands in the new upstream."""

    #: The place in the new upstream, scored against ``anchor``.
    scored: Scored
    #: The block's anchor in the release before the new upstream (what it was placed by).
    anchor: Anchor
    #: Releases on the way whose change moved the statements around the block.
    via: tuple[str, ...]


def walked(block: Block, history: MemberHistory) -> Walked | None:
    """The block's place in the new upstream, followed through every release between the
    base and it; None without a release between them, or when a step is not clear.

    A long upgrade can change the code around a block so much that nothing in the new
    method resembles its anchor clearly, while each release on the way changed only a part
    of it. Walked one release at a time, every step is a small change the anchor can
    judge (its own floor and margin); at each step the statements around the chosen place
    in that release become the anchor for the next."""
    later = history.versions[history.base + 1 : history.target + 1]
    steps = [v for v in later if v.member is not None]
    if len(steps) < 2 or history.versions[history.target].member is None:
        return None
    current = block.anchor
    via: list[str] = []
    for version in steps:
        assert version.member is not None
        found = clear_place(index_of(version.member), replace(block, anchor=current))
        if found is None:
            return None
        if version is steps[-1]:
            return Walked(found, current, tuple(via))
        moved = anchor_at(found.slot, block.kind)
        if _site(moved) != _site(current):
            via.append(version.label)
        current = moved
    return None


def _site(anchor: Anchor) -> Anchor:
    """What of an anchor a move changes: the statements around it and those it replaced,
    each by its own text (a compound statement by its header: a change of its body moved
    nothing around the block)."""
    heads = tuple(split_full_key(k)[0] for k in anchor.replaced)
    return replace(anchor, replaced=heads, resolution=None)


def anchor_at(slot: Slot, kind: BlockKind) -> Anchor:
    """The anchor a block of ``kind`` at ``slot`` has: the statements around it there."""
    stmts = slot.suite.stmts
    before = tuple(s.key for s in stmts[: slot.index][::-1][:CONTEXT])
    after = tuple(s.key for s in stmts[slot.index + slot.span :][:CONTEXT])
    span = slot.held()
    if kind is BlockKind.HEADER:
        replaced = tuple(s.key for s in span)
    else:
        replaced = tuple(full_key(s) for s in span)
    return Anchor(slot.path, before, after, replaced, edge_of(bool(before), bool(after)))


# --- the change that brought a statement's text ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Brought:
    """The change that brought one statement's text, as a note names it."""

    #: The statement's own key (a compound statement by its header).
    key: str
    #: The release or commit that brought its text into the member ("" when the oldest
    #: version of history has it already: its arrival is older than history).
    by: str
    #: The release or commit that brought it to its place, when that change only moved
    #: text ``by`` had brought (re-indented into a ``with``, re-wrapped, or from elsewhere
    #: in the member); "" when ``by`` brought it there.
    moved: str = ""
    #: The release or commit that gave the statement its text at its place by editing the
    #: one ``by`` brought there (an argument changed); "" when ``by`` brought this text.
    edited: str = ""


def brought(history: MemberHistory, head: str, at: int) -> Brought:
    """The change that brought the text of the statement keyed ``head``, which came to its
    place with the version at position ``at``: the oldest version of the run up to ``at``
    whose member holds that text anywhere. Keys are read through the syntax tree, so
    neither indentation nor wrapping nor the place in the member tells two texts apart: a
    change that only moved the statement did not bring it."""
    first = at
    while first > 0 and _held_anywhere(history.versions[first - 1], head):
        first -= 1
    label = history.versions[at].label
    if first == at:
        # The oldest version read already has it: its arrival is older than history.
        return Brought(head, label if at > 0 else "")
    return Brought(head, history.versions[first].label if first > 0 else "", label)


def brought_here(
    history: MemberHistory,
    heads: Sequence[str],
    path: tuple[str, ...],
    since: int,
    upto: int | None = None,
) -> tuple[Brought, ...]:
    """What brought each statement keyed ``heads`` (own keys) that the base (or the version
    at ``upto``) holds in the body at ``path``: it came there with the oldest version of
    the run of versions up to that one that have it there, and not before position
    ``since`` (the change the place records)."""
    found = []
    for head in heads:
        # The text as it is: a statement edited since came with the edit.
        at = _arrival(history, head, path, upto, edited=False)
        found.append(
            _origin(history, head, path, max(since, at if at is not None else since), since)
        )
    return tuple(found)


def _origin(
    history: MemberHistory, head: str, path: tuple[str, ...], at: int, since: int = 0
) -> Brought:
    """What brought the statement keyed ``head``, whose text came to the body at ``path``
    with the version at ``at``: when that version edited a statement an earlier change (not
    before position ``since``) had brought there (``_edited_from``), that change, and
    ``at`` as the edit; else ``brought``.

    ``git log -S`` of a statement finds the change that brought it, not the one that
    changed an argument of it later: a note naming only the edit hides that the statement
    was there before it (and from when the runners lag behind it)."""
    found = brought(history, head, at)
    before = _edited_from(history, head, path, at) if found.by and not found.moved else None
    if before is None:
        return found
    came = _arrival(history, before, path, at - 1, edited=False)
    if not came or came < since:
        return found  # older than history, or than the change the place records
    first = _origin(history, before, path, came, since)
    if not first.by:
        return found
    return Brought(head, first.by, first.moved, history.versions[at].label)


def _edited_from(history: MemberHistory, head: str, path: tuple[str, ...], at: int) -> str | None:
    """The statement the version at ``at`` edited into the one keyed ``head`` in the body
    at ``path``: the only statement of the version before it there alike to it (as the
    anchor tells one statement edited from another) that ``at`` no longer holds there;
    None when there is none, or several."""
    if at < 1 or history.versions[at - 1].member is None:
        return None
    now = history.versions[at]
    was = {k for _, body in _bodies_along(history.versions[at - 1], path, False) for k in body}
    alike = [
        key
        for key in sorted(was)
        if key != head and similarity(head, key) >= HAD and not _held_at(now, key, path, False)
    ]
    return alike[0] if len(alike) == 1 else None


def _held_anywhere(version: Version, head: str) -> bool:
    """Whether some body of ``version``'s member holds the statement keyed ``head``."""
    return version.member is not None and any(head in body for body in _body_keys(version, True))


def which_brought(items: Sequence[Brought], named: Callable[[str], str], oldest: str = "") -> str:
    """The statements ``items`` with the changes that brought them, for a note: "`a; b`,
    which X brought", and for each other change ", and `c`, which Y brought"; a later
    change that only moved them is said too ("(Z moved it here)"; "which Z moved here
    from elsewhere in the member" when the oldest version of history has the text), and
    one older than history as such ("which ``oldest`` already had")."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for item in items:
        groups.setdefault((item.by, item.moved, item.edited), []).append(item.key)
    parts = []
    for (by, moved, edited), keys in groups.items():
        quoted = f"`{_quoted(keys)}`"
        them = "them" if len(keys) > 1 else "it"
        since = [f"{named(moved)} moved {them} here"] if moved else []
        since += [f"{named(edited)} changed {them} into this text"] if edited else []
        later = f" ({', '.join(since)})" if since else ""
        if not by and moved:
            parts.append(f"{quoted}, which {named(moved)} moved here from elsewhere in the member")
        elif not by:
            had = f"{named(oldest)} already had" if oldest else "history already had"
            parts.append(f"{quoted}, which {had} (older than the history read)")
        else:
            parts.append(f"{quoted}, which {named(by)} brought{later}")
    return ", and ".join(parts)


# --- the changes omni's code stands against -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoodAgainst:
    """The releases (or commits) up to the base that omni's code, kept at a block's place
    as it is, stands against, each oldest first."""

    #: Each that brought a statement the block replaces there: omni's code replaces that
    #: change's code (the statements ``never_had`` keeps are no part of it).
    brought: tuple[str, ...] = ()
    #: Each that took out a statement of upstream's that omni's code still holds there and
    #: the base lacks: the runners lag behind that change there, and the code keeps the lag.
    took_out: tuple[str, ...] = ()


def stood_against(block: Block, history: MemberHistory) -> StoodAgainst:
    """What omni's code at the block's place stands against (nothing when the place is not
    the base's)."""
    if not _verified(history, block):
        return StoodAgainst()
    path = tuple(block.anchor.path)
    stays = never_had(block, history) if block.anchor.replaced else None
    brought: set[int] = set()
    for key in block.anchor.replaced:
        head = split_full_key(key)[0]
        at = None if stays is not None and stays.holds(head) else _arrival(history, head, path)
        if at:  # 0: older than history, which dates nothing
            brought.add(at)
    gone = {_departure(history, split_full_key(k)[0], path) for k in code_keys(block.code) or ()}
    took_out = {at for at in gone if at is not None}
    labels = [v.label for v in history.versions]
    return StoodAgainst(
        tuple(labels[i] for i in sorted(brought)), tuple(labels[i] for i in sorted(took_out))
    )


def _departure(history: MemberHistory, head: str, path: tuple[str, ...]) -> int | None:
    """The position of the release (or commit) up to the base that took the statement keyed
    ``head`` out of the body at ``path``: the one after the newest release before the base
    that holds it there, when the base holds nothing like it there (None otherwise)."""
    base = history.versions[history.base]
    if base.member is None or _held_at(base, head, path):
        return None
    later = history.base
    for position in range(history.base - 1, -1, -1):
        version = history.versions[position]
        if version.member is None:
            continue
        if any(head in body for _, body in _bodies_along(version, path, False)):
            return later
        later = position
    return None


def _held_at(version: Version, head: str, path: tuple[str, ...], edited: bool = True) -> bool:
    """Whether ``version``'s body at ``path`` holds the statement keyed ``head`` (with
    ``edited``, edited a little at most, as the anchor tells one statement edited from
    another)."""
    keys = {key for _, body in _bodies_along(version, path, False) for key in body}
    return head in keys or (edited and any(similarity(head, key) >= HAD for key in keys))


def post_dates(block: Block, history: MemberHistory, label: str) -> str:
    """The newest change after ``label`` that brought the text of an upstream statement an
    unmarked edit's code holds ("" when none did, or ``label`` is not in history): the
    runner's text at the edit's place is a copy made after ``label``, which saw its change
    (a statement's text dates from the oldest version of the run up to the base whose
    member holds it anywhere, ``brought``: a change that only moved it dates nothing). A
    marked block's code is omni's and dates nothing, as in ``never_had``."""
    order = [v.label for v in history.versions]
    mine = every_key(block.code) if not block.marked else None
    base = history.versions[history.base]
    if label not in order or mine is None or base.member is None:
        return ""
    dated = {
        order.index(found.by)
        for head in mine
        if _held_anywhere(base, head)
        for found in [brought(history, head, history.base)]
        if found.by
    }
    newest = max(dated, default=-1)
    return order[newest] if newest > order.index(label) else ""
