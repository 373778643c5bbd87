"""`continue`: the edited generated runners taken as the new state of the workspace.

A maintainer resolves the code of a conflict where the tool put it: in the generated
runner, by uncommenting the block where it belongs and changing it as needed, a signature
included, and fixes what verify found by editing the blocks in place. Like `git rebase
--continue`, one command then takes those files as the new state, and like `git rerere`
remembers each answer: every block whose code or place changed gets a recorded resolution
(the place in the upstream, the code when it is not the block's own, who and why), which
every later command replays, and which turns back into a conflict that says why when
upstream or omni changes under it.

How: the generated runner as sync writes it now and the edited one are both extracted
against the upstream they were generated on, so each block's place and code read as an
anchor on that upstream. The edits that differ are the maintainer's; each goes to the
block whose code it holds (a conflict that left its region, or a placed block whose lines
changed). A block whose code is gone was dropped there. The patches so resolved are synced
again in memory and must give the edited statements back, or nothing is written.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from omni_port.api.author import author
from omni_port.api.inputs import Settings, extract_options, read_lock
from omni_port.api.locked import locked_transplants
from omni_port.api.workflows import (
    Loaded,
    SyncRequest,
    WorkspaceSync,
    load_workspace,
    sticky_upstream,
    sync_loaded,
)
from omni_port.errors import BadInput
from omni_port.extract.extractor import extract_module
from omni_port.model import (
    CONFLICT_OPEN,
    Block,
    BlockKind,
    Code,
    Copy,
    Finding,
    ModulePatches,
    PatchSet,
    Placement,
    Resolution,
    Severity,
    SourceText,
    Status,
    Tree,
    code_digest,
)
from omni_port.patches import edits, lockfile, written
from omni_port.pyast import memo
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import dedent_code, find_member, header_end, walk
from omni_port.report import shorten
from omni_port.sources.config import Config
from omni_port.sources.textio import decode

__all__ = ["Continued", "Taken", "continue_workspace", "generated_files", "take_edits"]

#: Least code similarity for a changed edit to count as a block's new code when more than
#: one block of the member could own it.
SIMILAR = 0.3


@dataclass(frozen=True, slots=True)
class Taken:
    """One block's new state, read from the edited runner."""

    block_id: str
    #: Where it is recorded to go, and what (``code``: None for the block's own).
    resolution: Resolution
    #: The line of the edited runner that shows it (0 for a dropped block).
    line: int
    #: The block was a conflict before.
    was_conflict: bool


@dataclass(frozen=True, slots=True)
class Continued:
    """What `continue` takes from the edited runners, and the workspace after it."""

    #: The blocks given a resolution, in module order.
    taken: tuple[Taken, ...]
    #: The patches with those resolutions; equal to the loaded ones when nothing changed.
    patch_set: PatchSet
    #: The sync of those patches: the runners as they will be written.
    synced: WorkspaceSync
    #: Notes: edits only of comments or layout, which the runners do not keep.
    notes: tuple[Finding, ...]
    #: Generated modules the maintainer edited.
    edited: tuple[str, ...]


def continue_workspace(patches: Path, generated: Path, why: str, settings: Settings) -> Continued:
    """`continue`: the generated runners of ``generated``, as edited, taken against the
    workspace `sync` loads (its lock's upstream and transplant inputs), signed by git's
    author identity; writes nothing. BadInput without a lock, and as ``take_edits``."""
    config = settings.config
    lock = read_lock(generated)
    request = SyncRequest(
        patches,
        sticky_upstream(settings, generated),
        generated,
        config.upstream_class,
        config.history,
        locked_transplants(config, generated),
    )
    _not_earlier(generated, lock)
    loaded = load_workspace(request, settings)
    edited = generated_files(generated, (*lock.outputs, lockfile.LOCK_NAME))
    return take_edits(loaded, config, edited, why, author())


def take_edits(
    loaded: Loaded, config: Config, edited: Mapping[str, bytes], why: str, by: str
) -> Continued:
    """Read the edited runners (``edited``: module name -> bytes on disk) against the
    workspace's sync and record what changed as resolutions; writes nothing.

    Raises BadInput: OP005 when the workspace changed since the runners were generated
    (the lock on disk is not the one the sync gives now: run `sync` before editing), OP002
    when an edited runner does not parse, OP206 at an edit no block owns (upstream's or
    omni-owned code), or when the resolved patches do not give the edit back.
    """
    with memo.run():
        pristine = sync_loaded(loaded, config)
        _same_generation(loaded, pristine, edited)
        changed = [
            name
            for name in sorted(edited)
            if name.endswith(".py") and edited[name] != pristine.files.get(name)
        ]
        taken: list[Taken] = []
        for name in changed:
            shown = config.recorded_path(loaded.request.generated / name)
            found = _module_taken(loaded, pristine, name, edited[name], config)
            taken.extend(_signed(item, shown, why, by) for item in found)
        patch_set = loaded.patch_set
        for item in taken:
            patch_set = edits.resolve(patch_set, item.block_id, item.resolution)
        synced = sync_loaded(loaded, config, patch_set) if taken else pristine
        notes = [_check_given_back(loaded, synced, name, edited[name]) for name in changed]
    return Continued(
        tuple(taken), patch_set, synced, tuple(n for n in notes if n is not None), tuple(changed)
    )


def _same_generation(loaded: Loaded, pristine: WorkspaceSync, edited: Mapping[str, bytes]) -> None:
    """The runners on disk come from the sync the workspace gives now: else an edit could
    not be told from a change of the patches or the upstream since."""
    lock = lockfile.LOCK_NAME
    if edited.get(lock) == pristine.files.get(lock):
        return
    where = str(loaded.request.generated / lock)
    message = (
        "the patches, the upstream or the configuration changed since these runners were "
        "generated: an edit cannot be told from that change. Save your edits elsewhere, run "
        "`omni-port sync`, and make them again"
    )
    raise BadInput.at(Code.OP005, where, 1, message)


def _not_earlier(generated: Path, lock: lockfile.Lock) -> None:
    """The runners on disk are the generation the lock names: one an earlier sync of this
    checkout wrote under another lock (a pull or checkout replaced it) is not, and the
    edits beside it were made on that generation, not on the lock's."""
    held = written.held(generated, lock)
    earlier = [rel for rel, state in held.items() if state is written.Held.EARLIER]
    if not earlier or written.Held.EDITED not in held.values():
        return
    message = (
        f"holds what an earlier sync wrote, not what {lockfile.LOCK_NAME} names (a pull or "
        "checkout replaced the lock): the edited runners beside it were generated before "
        "that change, and an edit cannot be told from it. Drop the edits with `omni-port "
        "sync --discard-edits` (a copy of each goes to .omni-port/discarded/) and make them "
        "again on the runners it writes"
    )
    raise BadInput.at(Code.OP005, str(generated / earlier[0]), 1, message)


def _signed(item: Taken, shown: str, why: str, by: str) -> Taken:
    """``item`` with who recorded it and why (by default, where it was edited)."""
    where = f"{shown}:{item.line}" if item.line else shown
    resolution = replace(item.resolution, by=by, why=why or f"edited in {where}")
    return replace(item, resolution=resolution)


def _module_taken(
    loaded: Loaded, pristine: WorkspaceSync, name: str, data: bytes, config: Config
) -> Iterator[Taken]:
    path = str(loaded.request.generated / name)
    module = next((m for m in loaded.patch_set.modules if m.name == name), None)
    if module is None:
        raise BadInput.at(Code.OP206, path, 1, "no patches make this module: nothing to record")
    before = _read(pristine.files[name], path)
    after = _read(data, path)
    options = extract_options(config, loaded.request.upstream_class, lenient=True)
    old = _blocks(extract_module(before, name, loaded.upstream, options).module)
    new = _blocks(extract_module(after, name, loaded.upstream, options).module)
    placements = {p.block_id: p for p in pristine.synced.placements if p.module == name}
    still = _conflicts_left(after.text)
    to_before = _line_map(after.text, before.text)
    for owner, member in _members(module):
        mine = [
            p
            for p in module.pieces
            if isinstance(p, Block) and (p.owner, p.member) == (owner, member)
        ]
        before_edits = [b for b in old if (b.owner, b.member) == (owner, member)]
        after_edits = [b for b in new if (b.owner, b.member) == (owner, member)]
        gone, added = _difference(before_edits, after_edits)
        # A block is touched when its conflict region went, when an edit it was changed or
        # vanished, or when a new edit sits in its lines (an edit followed as upstream's
        # code is upstream's lines, where no edit was before).
        spans = [(e.origin.start, e.origin.end) for e in gone]
        spans += [_mapped(to_before, e.origin.start, e.origin.end) for e in added]
        touched = [
            b
            for b in mine
            if b.id not in still
            and (
                placements[b.id].status is Status.CONFLICT
                or any(_overlaps(placements[b.id], span) for span in spans)
            )
        ]
        if not touched and not added:
            continue
        owners = _owners(touched, added)
        for edit in added:
            if id(edit) not in owners:
                raise BadInput.at(Code.OP206, path, edit.origin.start, _unowned(edit, touched))
        for block in touched:
            found = next((e for e in added if owners.get(id(e)) is block), None)
            resolution = _resolution(loaded, module, block, found)
            line = found.origin.start if found is not None else 0
            conflict = placements[block.id].status is Status.CONFLICT
            yield Taken(block.id, resolution, line, conflict)


def _read(data: bytes, path: str) -> SourceText:
    source = decode(data, path)
    parse(source.text, path)  # OP002 with a caret at the line that does not parse
    return source


def _blocks(module: ModulePatches) -> list[Block]:
    return [p for p in module.pieces if isinstance(p, Block)]


def _members(module: ModulePatches) -> list[tuple[str, str]]:
    return [(p.owner, p.name) for p in module.pieces if isinstance(p, Copy)]


def _conflicts_left(text: str) -> set[str]:
    """Ids of the blocks whose conflict region is still in the file."""
    found = set()
    for line in text.split("\n"):
        head, _, rest = line.strip().partition(CONFLICT_OPEN)
        if not head and rest:
            found.add(rest.split()[0])
    return found


def _key(block: Block) -> tuple[object, ...]:
    """An edit as its statements make it: comment and blank lines apart (a conflict region
    beside a block's statements is comments; deleting it changes none of that block)."""
    statements = tuple(
        line
        for line in block.code.split("\n")
        if line.strip() and not line.lstrip().startswith("#")
    )
    return (block.kind, statements, replace(block.anchor, resolution=None))


def _difference(before: Sequence[Block], after: Sequence[Block]) -> tuple[list[Block], list[Block]]:
    """(edits only ``before`` has, edits only ``after`` has): the unchanged ones, equal in
    kind, code and anchor, cancel out (the n-th with the n-th)."""
    left = list(before)
    added = []
    for edit in after:
        twin = next((b for b in left if _key(b) == _key(edit)), None)
        if twin is None:
            added.append(edit)
        else:
            left.remove(twin)
    return left, added


def _overlaps(placement: Placement, span: tuple[int, int]) -> bool:
    """Whether the lines a placed block has in the generated runner touch ``span``."""
    start, end = placement.start, max(placement.end, placement.start)
    return bool(start) and start <= span[1] and span[0] <= end


def _line_map(edited: str, generated: str) -> list[int]:
    """For each line of the edited runner (1-based, index 0 unused), the line of the
    generated one it stands for: itself where unchanged, the lines it replaced otherwise."""
    old, new = generated.split("\n"), edited.split("\n")
    found = [0] * (len(new) + 2)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            found[j + 1] = (i1 + (j - j1) + 1) if tag == "equal" else min(i1 + 1, max(i2, 1))
    return found


def _mapped(lines: list[int], start: int, end: int) -> tuple[int, int]:
    inside = [lines[n] for n in range(start, min(end, len(lines) - 1) + 1) if lines[n]]
    return (min(inside), max(inside)) if inside else (0, -1)


def _owners(touched: Sequence[Block], added: Sequence[Block]) -> dict[int, Block]:
    """The block each changed edit is (by ``id()`` of the edit): a signature is the
    member's signature edit; otherwise the most similar code, marked with marked first.
    With one block and one edit they are each other's."""
    owners: dict[int, Block] = {}
    free = list(touched)
    for edit in [e for e in added if e.kind is BlockKind.SIGNATURE]:
        block = next((b for b in free if b.kind is BlockKind.SIGNATURE), None)
        if block is not None:
            owners[id(edit)] = block
            free.remove(block)
    rest = [e for e in added if e.kind is not BlockKind.SIGNATURE]
    statements = [b for b in free if b.kind is not BlockKind.SIGNATURE]
    pairs = sorted(
        ((_likeness(e, b), n, m) for n, e in enumerate(rest) for m, b in enumerate(statements)),
        reverse=True,
    )
    taken_edits: set[int] = set()
    taken_blocks: set[int] = set()
    alone = len(rest) == 1 and len(statements) == 1
    for score, n, m in pairs:
        if n in taken_edits or m in taken_blocks or (score < SIMILAR and not alone):
            continue
        owners[id(rest[n])] = statements[m]
        taken_edits.add(n)
        taken_blocks.add(m)
    return owners


def _likeness(edit: Block, block: Block) -> float:
    """How much ``edit`` is ``block``'s code: line similarity, plus one for markers kept
    (a marked block stays marked), and its replaced statements for a deletion."""
    if not edit.code.strip() and not block.code.strip():
        ratio = difflib.SequenceMatcher(None, edit.anchor.replaced, block.anchor.replaced).ratio()
    else:
        ratio = difflib.SequenceMatcher(
            None, edit.code.strip().split("\n"), block.code.strip().split("\n")
        ).ratio()
    return ratio + (1.0 if edit.marked == block.marked else 0.0)


def _unowned(edit: Block, touched: Sequence[Block]) -> str:
    what = "a signature" if edit.kind is BlockKind.SIGNATURE else f"`{shorten(edit.code, 50)}`"
    near = ", ".join(b.id for b in touched) or "none"
    return (
        f"this edit ({what}) is in upstream's code, outside every block (blocks edited or "
        f"resolved beside it: {near}): `continue` records blocks and conflict regions only. "
        "A change of upstream's code is an omni edit of its own: make it in the runners' "
        "source and extract again, or put it inside a block's lines"
    )


def _resolution(
    loaded: Loaded, module: ModulePatches, block: Block, found: Block | None
) -> Resolution:
    """Where ``block`` goes and what, as the edit ``found`` shows it (None: dropped)."""
    made_for = code_digest(block.code)
    if block.kind is BlockKind.SIGNATURE:
        signature, header = _upstream_signature(loaded, module, block)
        written = found.code if found is not None else header
        return Resolution("", (), (signature,), written, made_for)
    if found is None:
        # Dropped: nothing goes into the method (its first place always exists).
        return Resolution("", (), (), "", made_for)
    anchor = found.anchor
    after = anchor.before[0] if anchor.before else ""
    if found.code == block.code and found.kind is block.kind:
        return Resolution(after, anchor.path, anchor.replaced)
    return Resolution(after, anchor.path, anchor.replaced, found.code, made_for)


def _upstream_signature(loaded: Loaded, module: ModulePatches, block: Block) -> tuple[str, str]:
    """(the key, the dedented text) of the upstream signature a signature edit edits."""
    copy = next(
        p
        for p in module.pieces
        if isinstance(p, Copy) and (p.owner, p.name) == (block.owner, block.member)
    )
    upstream = loaded.upstream
    owner = (
        upstream.class_name if copy.upstream_owner and upstream.class_name else copy.upstream_owner
    )
    member = find_member(upstream.tree, owner, copy.upstream_name)
    if member is None:
        raise BadInput.at(Code.OP302, block.id, 0, f"{owner}.{copy.upstream_name} is gone upstream")
    text = upstream.tree.text(member.start, header_end(member))
    return member.key, dedent_code(text)


def _check_given_back(
    loaded: Loaded, synced: WorkspaceSync, name: str, data: bytes
) -> Finding | None:
    """BadInput (OP206) unless the resolved patches give the edited statements back; a
    note when they differ from the edit in comments or layout only."""
    path = str(loaded.request.generated / name)
    edited = decode(data, path).text
    again = decode(synced.files[name], name).text
    mine, theirs = _statements(parse(edited, path)), _statements(parse(again, name))
    for (where, line), (there, _) in zip(mine, theirs, strict=False):
        if where != there:
            message = (
                "this edit cannot be recorded as a block's place and code: the resolved "
                f"patches give `{shorten(there[1], 60)}` here instead. Edit within a block's "
                "lines or its conflict region"
            )
            raise BadInput.at(Code.OP206, path, line, message)
    if len(mine) != len(theirs):
        line = mine[len(theirs)][1] if len(mine) > len(theirs) else 1
        message = "the resolved patches do not give this edit back (statements missing)"
        raise BadInput.at(Code.OP206, path, line, message)
    # The header names the patches' digest, which resolutions change: not the edit's.
    skip = _header_lines(again)
    mine_lines, theirs_lines = edited.split("\n")[skip:], again.split("\n")[skip:]
    if mine_lines == theirs_lines:
        return None
    pairs = zip(mine_lines, theirs_lines, strict=False)
    first = skip + next((n for n, (a, b) in enumerate(pairs, 1) if a != b), 1)
    message = (
        "your edit differs from the runner sync writes in comments or layout only (first at "
        "this line): sync keeps a block's own comments, upstream's elsewhere"
    )
    return Finding(Code.OP902, path, first, message, severity=Severity.NOTE)


def _header_lines(text: str) -> int:
    """How many lines the generated header takes (it ends with the command that
    regenerates the module)."""
    lines = text.split("\n")
    return next((n + 1 for n, line in enumerate(lines[:12]) if line.startswith("# Regenerate:")), 0)


def _statements(tree: Tree) -> list[tuple[tuple[tuple[str, ...], str], int]]:
    """Every statement of a module as (body path, key), with its line, in order."""
    return [
        ((path, stmt.key), stmt.start) for path, suite in walk(tree.body) for stmt in suite.stmts
    ]


def generated_files(directory: Path, names: Sequence[str]) -> dict[str, bytes]:
    """The files of a generated tree the lock lists, as they are on disk (a missing one
    is absent)."""
    found = {}
    for name in names:
        path = directory / name
        if path.is_file():
            found[name] = path.read_bytes()
    return found
