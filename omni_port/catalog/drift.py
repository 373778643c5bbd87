"""Drift between what is written down and what the code does: catalog, markers, upstream, GPU.

Each check is a pure function from parsed inputs to Findings (kinds as in the JSON report:
``uncatalogued``, ``missing-from-code``, ``content-drift``, ``location-drift``,
``implicit-edit``, ``parity``, ``stale-generated``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from omni_port.catalog import markdown
from omni_port.extract.markers import scan
from omni_port.model import Block, BlockKind, Code, Finding, ModulePatches, Severity, Stmt, Tree
from omni_port.pyast.syntax import dedent_code, split_full_key
from omni_port.report import shorten

#: An entry and a block this similar are the same code, drifted.
SIMILAR = 0.6
#: Share of an entry's code a block must still hold, in runs, to be that block grown.
CONTAINED = 0.75


@dataclass(frozen=True, slots=True)
class Runner:
    """One parsed runner module."""

    #: Module file name, e.g. ``npu_ar_model_runner.py``.
    name: str
    tree: Tree


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """A marked region found in a runner, where it is."""

    module: str
    class_name: str
    method: str
    #: The region's text, markers included, dedented.
    code: str
    path: str
    line: int


def code_blocks(runner: Runner) -> list[CodeBlock]:
    """Every marked region of a runner with its enclosing class and method."""
    tree = runner.tree
    blocks = []
    for region in scan(tree).regions:
        class_name, method = _enclosing(tree, region.opener.line)
        if not method:
            # A region around whole members is named after the first one, as in the catalog.
            method = next(
                (
                    s.name
                    for s in region.suite.stmts
                    if s.name and region.opener.line < s.start < region.closer.line
                ),
                "__body__",
            )
        code = dedent_code(tree.text(region.opener.line, region.closer.line))
        blocks.append(
            CodeBlock(runner.name, class_name, method, code, tree.path, region.opener.line)
        )
    return blocks


def _enclosing(tree: Tree, line: int) -> tuple[str, str]:
    """Names of the outermost class and the def (directly in it) that contain ``line``."""
    for stmt in tree.body.stmts:
        if stmt.start <= line <= stmt.full_end and stmt.kind == "ClassDef":
            members = stmt.clauses[0].stmts if stmt.clauses else ()
            inner = next((m for m in members if m.name and m.start <= line <= m.full_end), None)
            return stmt.name, inner.name if inner is not None else ""
        if stmt.start <= line <= stmt.full_end and stmt.name:
            return "", stmt.name
    return "", ""


def _member(tree: Tree, class_name: str, method: str) -> Stmt | None:
    for stmt in tree.body.stmts:
        if class_name and stmt.name == class_name and stmt.clauses:
            return next((m for m in stmt.clauses[0].stmts if m.name == method), None)
        if not class_name and stmt.name == method:
            return stmt
    return None


# --- catalog --------------------------------------------------------------------------------


def catalog_findings(
    catalog: markdown.Catalog, catalog_path: str, runners: Sequence[Runner]
) -> list[Finding]:
    """Entries without code, code without entries, and everything in between."""
    blocks = [b for runner in runners for b in code_blocks(runner)]
    trees = {runner.name: runner.tree for runner in runners}
    described: set[int] = set()
    findings: list[Finding] = []
    for entry in catalog.entries:
        finding, matched = _entry_finding(entry, catalog_path, blocks, trees)
        described.update(matched)
        if finding is not None:
            findings.append(finding)
    for index, block in enumerate(blocks):
        if index not in described:
            findings.append(_uncatalogued(block))
    return findings


def _entry_finding(
    entry: markdown.CatalogEntry, path: str, blocks: Sequence[CodeBlock], trees: Mapping[str, Tree]
) -> tuple[Finding | None, set[int]]:
    """The finding for one entry (None when it is current) and the blocks it describes."""
    pieces = markdown.marked_regions(entry.code) if entry.kind is markdown.EntryKind.BLOCK else ()
    if pieces:
        return _block_entry(entry, path, pieces, blocks)
    return _code_entry(entry, path, blocks, trees)


def _block_entry(
    entry: markdown.CatalogEntry, path: str, pieces: Sequence[str], blocks: Sequence[CodeBlock]
) -> tuple[Finding | None, set[int]]:
    here = [i for i, b in enumerate(blocks) if _same_place(entry, b)]
    matched = {i for i in here for piece in pieces if markdown.code_matches(piece, blocks[i].code)}
    if len(matched) >= len(pieces):
        return None, matched
    elsewhere = [
        i
        for i, b in enumerate(blocks)
        if i not in here and any(markdown.code_matches(p, b.code) for p in pieces)
    ]
    if elsewhere:
        block = blocks[elsewhere[0]]
        message = (
            f"entry '{entry.method} - {entry.title}' describes code that now sits in "
            f"{_where(block)} ({block.path}:{block.line})"
        )
        return _entry(entry, path, Code.OP405, "location-drift", message), set(elsewhere)
    return _drifted_or_missing(entry, path, "\n".join(pieces), [blocks[i] for i in here], here)


def _code_entry(
    entry: markdown.CatalogEntry, path: str, blocks: Sequence[CodeBlock], trees: Mapping[str, Tree]
) -> tuple[Finding | None, set[int]]:
    """Whole-method excerpts, unmarked statements and module-level extensions."""
    if entry.kind is markdown.EntryKind.MODULE:
        return _module_entry(entry, path, trees), set()
    text = _entry_scope_text(entry, trees)
    if text is not None and markdown.appears_in(entry.code, text):
        # A whole-method excerpt describes the marked regions it shows.
        inside = {
            i
            for i, b in enumerate(blocks)
            if _same_place(entry, b) and markdown.appears_in(b.code, entry.code)
        }
        return None, inside if entry.kind is markdown.EntryKind.METHOD else set()
    if text is None:
        message = f"entry '{entry.method} - {entry.title}': {_scope(entry)} no longer exists"
        return _entry(entry, path, Code.OP403, "missing-from-code", message), set()
    similarity = markdown.code_similarity(entry.code, text)
    if similarity >= SIMILAR and entry.kind is markdown.EntryKind.METHOD:
        diff = _diff(entry.code, text)
        message = f"entry '{entry.method} - {entry.title}' differs from {_scope(entry)}"
        return _entry(entry, path, Code.OP404, "content-drift", message, diff), set()
    message = f"entry '{entry.method} - {entry.title}': its code is no longer in {_scope(entry)}"
    return _entry(entry, path, Code.OP403, "missing-from-code", message), set()


def _drifted_or_missing(
    entry: markdown.CatalogEntry,
    path: str,
    code: str,
    candidates: Sequence[CodeBlock],
    indices: list[int],
) -> tuple[Finding, set[int]]:
    match = _drifted_block(code, candidates)
    if match is not None:
        at, how = match
        block = candidates[at]
        message = (
            f"entry '{entry.method} - {entry.title}' and the block at {block.path}:{block.line} "
            f"differ ({how})"
        )
        finding = _entry(entry, path, Code.OP404, "content-drift", message, _diff(code, block.code))
        return finding, {indices[at]}
    message = f"entry '{entry.method} - {entry.title}': no block in {_scope(entry)} has this code"
    return _entry(entry, path, Code.OP403, "missing-from-code", message), set()


def _drifted_block(code: str, candidates: Sequence[CodeBlock]) -> tuple[int, str] | None:
    """The candidate an entry's code drifted into, and how: edited in place (similar), or
    grown around (the block still holds most of the entry's code)."""
    if not candidates:
        return None
    similar = [markdown.code_similarity(code, b.code) for b in candidates]
    best = max(range(len(candidates)), key=similar.__getitem__)
    if similar[best] >= SIMILAR:
        return best, f"similarity {similar[best]:.2f}"
    kept = [markdown.code_containment(code, b.code) for b in candidates]
    best = max(range(len(candidates)), key=kept.__getitem__)
    if kept[best] >= CONTAINED:
        return best, f"the block grew around the entry's code, {kept[best]:.0%} of it kept"
    return None


def _module_entry(
    entry: markdown.CatalogEntry, path: str, trees: Mapping[str, Tree]
) -> Finding | None:
    """A module-level entry (a NamedTuple extension, say) must appear in some runner."""
    named = [trees[entry.module]] if entry.module in trees else list(trees.values())
    texts = ["".join(line + "\n" for line in tree.lines) for tree in named]
    if any(markdown.appears_in(entry.code, text) for text in texts):
        return None
    nearest = [_near(entry.code, text) for text in texts]
    best = max(nearest, key=lambda window: markdown.code_similarity(entry.code, window), default="")
    if markdown.code_similarity(entry.code, best) >= SIMILAR:
        message = f"entry '{entry.method} - {entry.title}' differs from the code in the runners"
        return _entry(entry, path, Code.OP404, "content-drift", message, _diff(entry.code, best))
    message = f"entry '{entry.method} - {entry.title}': its code is not in any runner module"
    return _entry(entry, path, Code.OP403, "missing-from-code", message)


def _near(code: str, text: str) -> str:
    """The run of ``text`` lines most like ``code``, for a readable diff."""
    lines = text.splitlines()
    width = max(len(code.splitlines()), 1)
    windows = ("\n".join(lines[i : i + width]) for i in range(max(len(lines) - width + 1, 1)))
    return max(windows, key=lambda window: markdown.code_similarity(code, window), default="")


def _entry_scope_text(entry: markdown.CatalogEntry, trees: Mapping[str, Tree]) -> str | None:
    """The code an unmarked entry should appear in: its method."""
    tree = trees.get(entry.module) if entry.module else None
    candidates = [tree] if tree is not None else list(trees.values())
    for candidate in candidates:
        member = _member(candidate, entry.class_name, entry.method)
        if member is not None:
            return dedent_code(candidate.text(member.start, member.full_end))
    return None


def _same_place(entry: markdown.CatalogEntry, block: CodeBlock) -> bool:
    if entry.module and entry.module != block.module:
        return False
    return (entry.class_name, entry.method) == (block.class_name, block.method)


def _where(block: CodeBlock) -> str:
    owner = f"{block.class_name}." if block.class_name else ""
    return f"{block.module} {owner}{block.method or '<class body>'}"


def _scope(entry: markdown.CatalogEntry) -> str:
    owner = f"{entry.class_name}." if entry.class_name else ""
    return f"{entry.module or '?'} {owner}{entry.method}"


def _entry(
    entry: markdown.CatalogEntry, path: str, code: Code, kind: str, message: str, detail: str = ""
) -> Finding:
    return Finding(code, path, entry.line, message, detail=detail)


def _uncatalogued(block: CodeBlock) -> Finding:
    first = next((line for line in block.code.splitlines()[1:] if line.strip()), "").strip()
    message = f"block in {_where(block)} is not in the catalog: {first[:80]}"
    return Finding(Code.OP402, block.path, block.line, message)


def _diff(expected: str, actual: str) -> str:
    lines = difflib.unified_diff(
        dedent_code(expected).splitlines(),
        dedent_code(actual).splitlines(),
        "catalog",
        "code",
        lineterm="",
    )
    return "\n".join(lines)


# --- implicit edits -----------------------------------------------------------------------


def divergence_findings(modules: Sequence[ModulePatches]) -> list[Finding]:
    """Every implicit edit of a copied member (code that differs from its base outside
    markers), as a note: the patches carry it."""
    findings = []
    for module in modules:
        for piece in module.pieces:
            if isinstance(piece, Block) and not piece.marked:
                findings.append(_divergence(module, piece))
    return findings


def _divergence(module: ModulePatches, block: Block) -> Finding:
    owner = f"{block.owner}." if block.owner else ""
    what = {
        BlockKind.DELETION: "removes upstream",
        BlockKind.REPLACEMENT: "replaces upstream",
        BlockKind.HEADER: "rewrites the header of",
        BlockKind.SIGNATURE: "rewrites the signature of",
    }.get(block.kind, "adds code to")
    target = block.anchor.replaced[0] if block.anchor.replaced else f"{owner}{block.member}"
    lines = f"lines {block.origin.start}-{block.origin.end}" if block.code else "a deletion"
    quoted = shorten(split_full_key(target)[0], 70)
    message = (
        f"implicit edit in {owner}{block.member} ({lines}) {what} `{quoted}`; sync carries "
        f"it, `omni-port adopt {block.id}` marks it"
    )
    # Information, not a failure: the patches carry the edit (a gate that is always red
    # on a resolved workspace gets ignored).
    return Finding(
        Code.OP407,
        block.origin.path,
        max(block.origin.start, 1),
        message,
        severity=Severity.NOTE,
        detail=block.code.rstrip("\n"),
    )


# --- stale outputs --------------------------------------------------------------------------


def stale_findings(
    expected: Mapping[str, bytes], actual: Mapping[str, bytes | None], root: str, command: str
) -> list[Finding]:
    """Outputs that differ from what the tool would write now (edited by hand or out of date)."""
    findings = []
    for rel in sorted(expected):
        have = actual.get(rel)
        if have == expected[rel]:
            continue
        state = "is missing" if have is None else "differs from what it would be now"
        message = f"{rel} {state}; run `{command}`"
        findings.append(Finding(Code.OP406, f"{root}/{rel}", 1, message))
    return findings
