"""Hunk-level GPU/NPU parity: which GPU omni change the NPU runners lack, and the reverse.

Each GPU omni hunk's evidence (``evidence``) is looked for in the code the NPU runner
actually runs for that method (``counterparts``); an NPU marked block is looked for the
same way in the GPU runner. Reviewed gaps (CUDA-only code, say) sit in an allow-list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from omni_port.extract.markers import scan
from omni_port.gpu.counterparts import (
    ClassIndex,
    KnownClass,
    Parity,
    Presence,
    class_pool,
    index_classes,
    method_pool,
    resolve,
    runner_class,
    status_of,
)
from omni_port.gpu.evidence import Item, ItemKind, flat, hunk_items, is_evidence, owned_items
from omni_port.gpu.vllm_delta import CopiedMethod, Delta, gpu_delta
from omni_port.model import Code, Finding, Severity, SourceText, Stmt, Tree, Upstream
from omni_port.pyast.syntax import normalize
from omni_port.sources.allowlist import allow_lines

#: Which NPU runner module mirrors which GPU runner module.
PAIRS = (
    ("gpu_model_runner.py", "npu_model_runner.py"),
    ("gpu_ar_model_runner.py", "npu_ar_model_runner.py"),
    ("gpu_generation_model_runner.py", "npu_generation_model_runner.py"),
)
#: An NPU block with less than this share of its statements in the GPU runner is NPU-only.
NPU_ONLY = 0.5
_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


@dataclass(frozen=True, slots=True)
class HunkParity:
    """One GPU omni hunk (or NPU block) and what the other family has of it."""

    #: "gpu" for a GPU hunk, "npu" for an NPU marked block.
    side: str
    module: str
    path: str
    owner: str
    member: str
    #: Hunk or block id (``gpu_ar_model_runner.GPUARModelRunner.execute_model.edit-03``).
    id: str
    #: Block kind, "owned" for an owned GPU method, "marked" for an NPU block.
    kind: str
    start: int
    end: int
    status: Parity
    #: Where the counterpart was looked for (``NPUARModelRunner.execute_model``).
    counterpart: str
    items: tuple[Item, ...]
    missing: tuple[Item, ...]
    #: Where the other family has most of the items it has (None when it has none).
    present_as: Presence | None = None
    #: The allow-list entry that covers a gap.
    allow: AllowEntry | None = None


# --- the check ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """A reviewed gap: ``module:Class.method[:hunk id or statement prefix]  reason``."""

    module: str
    owner: str
    member: str
    #: Hunk id (or its last part, ``edit-03``), a statement prefix, or "" for every hunk.
    selector: str
    reason: str
    #: Where the entry is written, for notes about entries that match nothing.
    path: str
    line: int


#: What a parity-allow or v2-allow entry names.
ALLOW_FORM = "module.py:Class.method[:hunk id or statement prefix]"


def parse_allow_list(text: str, path: str) -> tuple[AllowEntry, ...]:
    """Entries of a parity-allow or v2-allow file. BadInput (OP005) at a bad entry."""
    entries = []
    for entry in allow_lines(text, path, ALLOW_FORM):
        module, _, rest = entry.key.partition(":")
        where, _, selector = rest.partition(":")
        owner, _, member = where.partition(".")
        if not (module and owner and member):
            raise entry.bad(ALLOW_FORM)
        entries.append(
            AllowEntry(module, owner, member, selector.strip(), entry.reason, path, entry.line)
        )
    return tuple(entries)


def _selects(entry: AllowEntry, row: HunkParity, code: str) -> bool:
    if (entry.module, entry.owner, entry.member) != (row.module, row.owner, row.member):
        return False
    selector = entry.selector
    if not selector or selector == row.id or row.id.endswith("." + selector):
        return True
    try:
        wanted = normalize(selector)
    except SyntaxError:
        wanted = " ".join(selector.split())
    keys = [item.stmt for item in row.items] + [item.text for item in row.items]
    lines = [line.strip() for line in code.splitlines()]
    return any(k.startswith(wanted) for k in keys) or any(s.startswith(selector) for s in lines)


def hunk_parity(
    delta: Delta, npu: Mapping[str, Tree], allowed: Sequence[AllowEntry] = ()
) -> list[HunkParity]:
    """Every GPU omni hunk and NPU marked block, with what the other family has of it."""
    index = {**index_classes(delta.trees, "gpu"), **index_classes(npu, "npu")}
    rows: list[HunkParity] = []
    for gpu_name, npu_name in PAIRS:
        gpu_tree, npu_tree = delta.trees.get(gpu_name), npu.get(npu_name)
        if gpu_tree is None or npu_tree is None:
            continue
        gpu_cls, npu_cls = runner_class(gpu_tree), runner_class(npu_tree)
        if gpu_cls is None or npu_cls is None:
            continue
        rows.extend(_gpu_rows(delta, gpu_name, gpu_tree, gpu_cls, npu_cls.name, index))
        rows.extend(_npu_rows(npu_name, npu_tree, npu_cls, gpu_cls.name, index))
    return [_allow(row, allowed, delta) for row in rows]


def _gpu_rows(
    delta: Delta,
    module: str,
    tree: Tree,
    cls: Stmt,
    npu_class: str,
    index: ClassIndex,
) -> Iterator[HunkParity]:
    copied = {
        m.copy.name: m for m in delta.methods if (m.base.module, m.copy.owner) == (module, cls.name)
    }
    wider = class_pool(npu_class, index, "npu")
    for member in cls.clauses[0].stmts:
        if member.kind not in _DEF_KINDS:
            continue
        chain = resolve(npu_class, member.name, index)
        inherited = any(c.name == cls.name and m is member for c, m in chain)
        pool = method_pool(chain, "npu")
        for ident, kind, start, end, items in _gpu_hunks(module, cls.name, member, copied):
            status: Parity = Parity.INHERITED
            missing: tuple[Item, ...] = ()
            how: Presence | None = Presence.INHERITED
            if not inherited:
                status, missing, how = status_of(items, pool, wider)
            yield HunkParity(
                "gpu",
                module,
                tree.path,
                cls.name,
                member.name,
                ident,
                kind,
                start,
                end,
                status,
                _where(chain, npu_class, member.name),
                items,
                missing,
                how,
            )


def _gpu_hunks(
    module: str, owner: str, member: Stmt, copied: Mapping[str, CopiedMethod]
) -> Iterator[tuple[str, str, int, int, tuple[Item, ...]]]:
    """(id, kind, first line, last line, items) of each omni hunk of a GPU method."""
    method = copied.get(member.name)
    if method is None:
        ident = f"{module.removesuffix('.py')}.{owner}.{member.name}"
        yield ident, "owned", member.start, member.full_end, owned_items(member)
        return
    for block in method.hunks:
        items = hunk_items(block, member, method.base_method)
        yield block.id, block.kind.value, block.origin.start, block.origin.end, items


def _npu_rows(
    module: str, tree: Tree, cls: Stmt, gpu_class: str, index: ClassIndex
) -> Iterator[HunkParity]:
    stem = module.removesuffix(".py")
    wider = class_pool(gpu_class, index, "gpu")
    for number, (member, start, end, stmts) in enumerate(_npu_blocks(tree, cls), start=1):
        items = tuple(
            Item(ItemKind.STATEMENT, s.key, s.key, s.start) for s in stmts if is_evidence(s, member)
        )
        chain = resolve(gpu_class, member, index)
        status, missing, how = status_of(items, method_pool(chain, "gpu"), wider)
        if status is Parity.PARTIAL and len(missing) <= (1 - NPU_ONLY) * len(items):
            status, missing = Parity.PRESENT, ()
        ident = f"{stem}.{cls.name}.{member}.block-{number:02d}"
        yield HunkParity(
            "npu",
            module,
            tree.path,
            cls.name,
            member,
            ident,
            "marked",
            start,
            end,
            status,
            _where(chain, gpu_class, member),
            items,
            missing,
            how,
        )


def _npu_blocks(tree: Tree, cls: Stmt) -> Iterator[tuple[str, int, int, list[Stmt]]]:
    """(method, first line, last line, statements) of each marked region of the class."""
    for region in scan(tree).regions:
        inside = cls.start <= region.opener.line <= cls.full_end
        if not inside:
            continue
        members = [m for m in cls.clauses[0].stmts if m.start <= region.opener.line <= m.full_end]
        lo, hi = region.opener.line, region.closer.line
        if members and members[0].kind in _DEF_KINDS:
            stmts = [s for s in flat(members[0]) if lo < s.start < hi]
            yield members[0].name, lo, hi, stmts
            continue
        for member in region.suite.stmts:  # a region around whole methods
            if member.kind in _DEF_KINDS and lo < member.start < hi:
                yield member.name, member.start, member.full_end, flat(member)


def _where(chain: Sequence[tuple[KnownClass, Stmt]], start: str, name: str) -> str:
    if not chain:
        return f"{start} (which does not define `{name}` nor inherit it from a known class)"
    return " -> ".join(f"{cls.name}.{name}" for cls, _ in chain)


def _allow(row: HunkParity, allowed: Sequence[AllowEntry], delta: Delta) -> HunkParity:
    if row.status not in (Parity.PARTIAL, Parity.MISSING):
        return row
    code = _code_of(row, delta)
    entry = next((e for e in allowed if _selects(e, row, code)), None)
    return row if entry is None else replace(row, status=Parity.ALLOWED, allow=entry)


def _code_of(row: HunkParity, delta: Delta) -> str:
    tree = delta.trees.get(row.module)
    return tree.text(row.start, row.end) if tree is not None and row.side == "gpu" else ""


def parity_findings(
    rows: Sequence[HunkParity], allowed: Sequence[AllowEntry] = ()
) -> list[Finding]:
    """OP408 ``parity`` findings for the gaps; notes for allow-list entries matching nothing."""
    findings = [_finding(row) for row in rows if row.status in (Parity.PARTIAL, Parity.MISSING)]
    used = {row.allow for row in rows if row.allow is not None}
    for entry in allowed:
        if entry not in used:
            message = f"allow-list entry {entry.module}:{entry.owner}.{entry.member} matches no gap"
            findings.append(
                Finding(Code.OP408, entry.path, entry.line, message, severity=Severity.NOTE)
            )
    return findings


def _finding(row: HunkParity) -> Finding:
    local = row.id.rsplit(".", 1)[-1]
    lacking = f"lacks {len(row.missing)} of {len(row.items)}: {row.missing[0].describe()}"
    if row.side == "npu":
        what = f"NPU block {row.owner}.{row.member} {local}"
        message = f"{what} has no counterpart in GPU {row.counterpart}: {lacking}"
    elif row.kind == "owned":
        what = f"GPU omni-owned method {row.owner}.{row.member}"
        message = f"{what} has no counterpart in NPU {row.counterpart}: {lacking}"
    else:
        what = f"GPU omni hunk {row.owner}.{row.member} {local} ({row.kind})"
        message = f"{what} has no counterpart in NPU {row.counterpart}: {lacking}"
    detail = [f"line {item.line}: {item.describe()}" for item in row.missing]
    selector = f":{local}" if row.kind != "owned" else ""
    detail.append(f"allow with: {row.module}:{row.owner}.{row.member}{selector}  <reason>")
    line = row.missing[0].line if row.side == "gpu" else row.start
    return Finding(Code.OP408, row.path, line, message, detail="\n".join(detail))


def check_parity(
    gpu_sources: Mapping[str, SourceText],
    npu: Mapping[str, Tree],
    bases: Mapping[str, Upstream],
    target: str,
    allowed: Sequence[AllowEntry] = (),
) -> list[Finding]:
    """Hunk-level parity findings of GPU runner sources (by file name) and parsed NPU runners.

    ``bases`` are the candidate vLLM releases by label (``target`` among them). Raises
    BadInput for a source that does not parse or has malformed markers.
    """
    delta = gpu_delta(gpu_sources, bases, target, lenient=True)
    return [*delta.findings, *parity_findings(hunk_parity(delta, npu, allowed), allowed)]
