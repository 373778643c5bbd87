"""What is left to resolve in a generated tree, said plainly at the end of `verify`.

`make sync` succeeds when the tool did its work, as `ruff format` does beside `ruff check`;
its last lines say whether the runners are deployable and, when they are not, the commands
that resolve them. `check` (the gate) and the runtime switch refuse the same runners.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from omni_port import api
from omni_port.api import resolution
from omni_port.api.files import lockfile
from omni_port.api.model import (
    BadInput,
    Block,
    BlockKind,
    Code,
    Finding,
    Layout,
    ModulePatches,
    PatchSet,
    Placement,
    RegionKind,
    Severity,
)
from omni_port.api.report import candidate_place
from omni_port.api.resolution import conflicts
from omni_port.cli import Options

#: Candidates shown per conflict.
SHOWN = 3


def verdict(findings: Sequence[Finding]) -> str:
    """``18 conflicts and 4 verify problems: these runners are not deployable until resolved``
    (``4 verify problems (2 behind conflicts)`` when open conflicts own some)."""
    conflicts = sum(1 for f in findings if f.code is Code.OP310)
    errors = [f for f in findings if f.severity is Severity.ERROR and f.code is not Code.OP310]
    if not conflicts and not errors:
        return "no conflicts and no verify problems: these runners are deployable"
    behind = sum(1 for f in errors if f.behind_conflict)
    owned = f" ({behind} behind conflicts)" if behind else ""
    return (
        f"{conflicts} conflicts and {len(errors)} verify problems{owned}: these runners are not "
        "deployable until resolved (`omni-port check` and the runtime switch refuse them)"
    )


def next_steps(
    options: Options, generated: Path, patches_dir: Path, findings: Sequence[Finding]
) -> list[str]:
    """The commands that resolve each conflict of the tree's lock, then what to run."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if not errors:
        return []
    lines = list(_resolve_commands(options, generated, patches_dir))
    if any(f.code is not Code.OP310 for f in errors):
        lines.append(
            "fix the verify problems listed above (a conflict's commented-out block often "
            "causes them: resolve the conflicts first)"
        )
    lines.append("then run `make sync` (or `omni-port sync` and `omni-port verify`) again")
    return lines


def _resolve_commands(options: Options, generated: Path, patches_dir: Path) -> Iterator[str]:
    lock = lockfile.read_or_none(generated)
    if lock is None or not lock.conflicts:
        return
    if lock.layout is Layout.V2:
        yield from _v2_steps(lock)
        return
    ids = [str(row.get("id", "")) for row in lock.conflicts]
    route = conflicts.routes(lockfile.output_texts(generated, lock), ids)
    config = options.config
    try:
        request = api.SyncRequest(
            patches_dir,
            config.given_spec(lock.upstream),
            generated,
            config.upstream_class,
            config.history,
            tuple(config.path(label) for label, _ in lock.transplants),
        )
        workspace = api.workflows.load_workspace(request, options.settings)
        found = resolution.placements(workspace)
    except BadInput:
        for block_id in ids:
            yield _routed(block_id, route[block_id], "")
        return
    yield f"resolve each conflict (candidates are lines of {lock.upstream}):"
    for block_id in ids:
        yield _command(workspace.patch_set, block_id, found, route[block_id])
    if any(r is not conflicts.Route.VANISHED for r in route.values()):
        yield (
            "or edit a conflict region in place (uncomment the code where it belongs, change "
            "it as needed), then run `omni-port continue`"
        )


def _v2_steps(lock: lockfile.Lock) -> Iterator[str]:
    """A V2 tree's conflicts: its patches are computed, not stored, so `resolve` has nothing
    to record; the allow-list (or a change in vLLM-Omni) decides instead."""
    yield "resolve each conflict of this V2 tree (then re-run `omni-port v2-sync`):"
    for row in lock.conflicts:
        module, owner, method = (str(row.get(k, "")) for k in ("module", "class", "method"))
        entry = f"{module}:{owner}.{method}  REASON"
        if row.get("kind") == RegionKind.OVERRIDE:
            yield (
                f"  {row.get('id', '')}: compose it by hand in vLLM-Omni, or list "
                f"`{entry}` in the --v2-allow file to keep omni's method"
            )
        else:
            yield (
                f"  {row.get('id', '')}: a hunk of a method spliced into the NPU override; "
                f"change it in vLLM-Omni, or list `{entry}` in the --v2-allow file"
            )


def _command(
    patches: PatchSet, block_id: str, found: dict[str, Placement], route: conflicts.Route
) -> str:
    block = _block(patches, block_id)
    placed = found.get(block_id)
    if block is None or placed is None:
        return _routed(block_id, route, "")
    if block[1].kind is BlockKind.SIGNATURE:
        return f"  {block_id}: a signature edit: write it in the conflict region, then continue"
    listed = "; ".join(
        f"#{rank} {candidate_place(c.line, c.span)} ({c.score:.2f})"
        for rank, c in enumerate(placed.candidates[:SHOWN], start=1)
    )
    # What sync finds now decides over a region written by an older sync.
    if route is not conflicts.Route.VANISHED:
        route = conflicts.Route.RANKED if listed else conflicts.Route.UNLISTED
    return _routed(block_id, route, listed)


def _routed(block_id: str, route: conflicts.Route, listed: str) -> str:
    """The command that resolves ``block_id`` by its ``route``; ``listed``: its candidates,
    as sync ranks them now ("" when not known)."""
    if route is conflicts.Route.VANISHED:
        return f"  {block_id}: its upstream method vanished: {conflicts.VANISHED_ROUTE}"
    if route is conflicts.Route.UNLISTED:
        return (
            f"  omni-port resolve {block_id} --at LINE    # no candidate works: the line to go "
            "before (--replacing N to replace N statements there), or --drop --why REASON "
            "when the edit is obsolete"
        )
    command = f"  omni-port resolve {block_id} --at '#K'"
    return f"{command}    # {listed}" if listed else command


def _block(patches: PatchSet, block_id: str) -> tuple[ModulePatches, Block] | None:
    for module in patches.modules:
        for piece in module.pieces:
            if isinstance(piece, Block) and piece.id == block_id:
                return module, piece
    return None
