"""Who overrides what: vLLM-Omni's V2 runners and vllm-ascend's V2 runner on vLLM's V2 base.

For every omni V2 runner class (a class of the omni modules whose bases lead to vLLM's
``GPUModelRunner``) and every method of the omni classes between it and vLLM, of the NPU
runner class and of vLLM's runner class, the report says who overrides it. The composed
NPU runner puts omni's classes above the NPU class (the order ``OmniNPUModelRunner`` of
the V1 runners has), so an omni override that ends in ``super().name(...)`` runs the NPU
override too. A method both sides override where neither delegates is a collision
(OP320): inheriting, in either order, runs only one of them. One where the NPU override
wraps ``super()`` and omni's replaces the method is a wrapper collision (OP323): with
omni's classes on top the NPU wrapper never runs (``v2-sync`` composes the two).

A second, quieter loss (OP321): omni replaces a vLLM method that calls a method the NPU
runner overrides, and omni's replacement no longer calls it, so the NPU override never runs
on that path. It is an error unless a reviewed entry says why (``module.py:Class.method:
npu_method  reason``, or the method itself is allow-listed): then a note.

The same report serves any pair of an NPU class and the vLLM class it extends: the model
state an omni class is rebased onto (``AscendModelState`` on ``DefaultModelState``) too.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from omni_port.errors import BadInput
from omni_port.gpu.counterparts import ClassIndex, calls_super, index_classes, mro, resolve
from omni_port.gpu.parity import AllowEntry
from omni_port.model import Code, Finding, Severity, Stmt, Tree
from omni_port.pyast import diff
from omni_port.pyast.syntax import find_def
from omni_port.v2 import calls

#: vLLM's Model Runner V2 class, which both runner families extend.
BASE_CLASS = "GPUModelRunner"
#: vllm-ascend's Model Runner V2 class.
NPU_CLASS = "NPUModelRunner"
_DEF_KINDS = ("FunctionDef", "AsyncFunctionDef")


@dataclass(frozen=True, slots=True)
class Sides:
    """The three parties of a composition, parsed."""

    #: vLLM-Omni's V2 runner modules by file name (``omni_model_runner.py``).
    omni: Mapping[str, Tree]
    #: vllm-ascend's V2 runner module.
    npu: Tree
    #: vLLM's V2 runner module the NPU runner extends.
    base: Tree
    #: Label of that vLLM release (``vllm==0.26.0``).
    base_label: str
    npu_class: str = NPU_CLASS
    base_class: str = BASE_CLASS
    #: vLLM releases omni's code may be written against, by label (for OP322: a method
    #: omni calls that only they define).
    candidates: Mapping[str, Tree] = field(default_factory=dict)
    #: Reviewed entries: a bypassed NPU override they name is a note, not an error.
    allowed: tuple[AllowEntry, ...] = ()


class Who(enum.StrEnum):
    """Which runner family overrides a method of the composed class."""

    OMNI = "omni"
    """Only vLLM-Omni's runner classes define it: the composed class keeps omni's."""
    NPU = "npu"
    """Only the NPU runner defines it: the composed class inherits the NPU method."""
    BOTH = "both"
    """Both define it: composed by ``super()``, or generated from the NPU override."""
    NEITHER = "neither"
    """Only vLLM's runner defines it."""


@dataclass(frozen=True, slots=True)
class Site:
    """Where one side defines a method."""

    #: The class whose definition runs first on this side.
    owner: str
    path: str
    line: int
    #: The code this side runs for the method ends in ``super().name(...)``: omni's then
    #: reaches the NPU override in the composed class, the NPU's reaches vLLM's.
    delegates: bool
    #: (class, path, line) of every definition this side runs for the method, first to
    #: last (an omni subclass's override and the omni base's it calls through ``super()``).
    chain: tuple[tuple[str, str, int], ...] = ()

    @property
    def last(self) -> tuple[str, str, int]:
        """The definition the side's code ends in: where the other side's code would go."""
        return self.chain[-1] if self.chain else (self.owner, self.path, self.line)


@dataclass(frozen=True, slots=True)
class MethodRow:
    """One method of a composed runner class."""

    name: str
    who: Who
    #: Line of vLLM's definition in the base (0 when vLLM's runner class lacks it).
    base_line: int
    omni: Site | None
    npu: Site | None

    @property
    def collision(self) -> bool:
        """Both override it and neither calls the other through ``super()``."""
        return (
            self.omni is not None
            and self.npu is not None
            and not self.omni.delegates
            and not self.npu.delegates
        )

    @property
    def wrapper_collision(self) -> bool:
        """The NPU override wraps ``super()`` and omni's replaces the method: with omni's
        classes on top, the NPU wrapper never runs (nor would omni's body below it)."""
        return (
            self.omni is not None
            and self.npu is not None
            and not self.omni.delegates
            and self.npu.delegates
        )


@dataclass(frozen=True, slots=True)
class RunnerReport:
    """The methods of one omni V2 runner class composed with the NPU runner."""

    #: Omni module file name.
    module: str
    #: Omni runner class.
    runner: str
    #: Omni classes between the runner and vLLM's class, the runner first.
    chain: tuple[str, ...]
    rows: tuple[MethodRow, ...]


@dataclass(frozen=True, slots=True)
class OverrideReport:
    runners: tuple[RunnerReport, ...]
    #: Collisions (OP320) and bypassed NPU overrides (OP321, notes), each once.
    findings: tuple[Finding, ...]
    npu_class: str
    #: Path of the NPU runner module, for reports.
    npu_path: str
    base_label: str
    base_class: str = BASE_CLASS

    def row(self, owner: str, name: str) -> MethodRow | None:
        """The row of a method as omni class ``owner`` defines it."""
        for runner in self.runners:
            for row in runner.rows:
                if row.name == name and row.omni is not None and row.omni.owner == owner:
                    return row
        return None


def override_report(sides: Sides) -> OverrideReport:
    """Every method of every omni V2 runner class, with who overrides it.

    Raises BadInput (OP004) when the NPU or vLLM module lacks its runner class, or when
    no omni module holds a class that extends vLLM's.
    """
    classes = _classes(sides)
    index = classes.index
    runners: list[RunnerReport] = []
    for module, tree in sorted(sides.omni.items()):
        for runner in _runner_classes(tree, index, sides.base_class):
            chain = _omni_chain(runner, index, sides.base_class)
            rows = _rows(runner, chain, classes, sides)
            runners.append(RunnerReport(module, runner, tuple(chain), tuple(rows)))
    if not runners:
        first = min(sides.omni) if sides.omni else ""
        path = sides.omni[first].path if first else ""
        raise BadInput.at(
            Code.OP004, path, 0, f"no class here extends {sides.base_class} (not V2 runners?)"
        )
    findings = [
        *_collisions(runners, sides),
        *_bypasses(runners, classes, sides),
        *_calls_into(sides, index),
    ]
    return OverrideReport(
        tuple(runners),
        tuple(findings),
        sides.npu_class,
        sides.npu.path,
        sides.base_label,
        sides.base_class,
    )


def _class(tree: Tree, name: str) -> Stmt:
    found = find_def(tree.body, name)
    if found is None or found.kind != "ClassDef" or not found.clauses:
        raise BadInput.at(Code.OP004, tree.path, 0, f"no class {name} in this module")
    return found


def _methods(cls: Stmt) -> dict[str, Stmt]:
    """A class's methods by name; a property and its setter count once (the first)."""
    found: dict[str, Stmt] = {}
    for member in cls.clauses[0].stmts:
        if member.kind in _DEF_KINDS and member.clauses:
            found.setdefault(member.name, member)
    return found


def _runner_classes(tree: Tree, index: ClassIndex, base_class: str) -> Iterator[str]:
    for stmt in tree.body.stmts:
        if stmt.kind == "ClassDef" and base_class in mro(stmt.name, index)[1:]:
            yield stmt.name


def _omni_chain(runner: str, index: ClassIndex, base_class: str) -> list[str]:
    """The omni classes a runner's MRO passes before vLLM's class."""
    order = mro(runner, index)
    return [name for name in order[: order.index(base_class)] if name in index]


@dataclass(frozen=True, slots=True)
class _Classes:
    """What a report reads of the three sides' classes, parsed once."""

    #: Omni's classes by name.
    index: ClassIndex
    #: The file of each omni class, by class name.
    paths: Mapping[str, str]
    #: The NPU runner class's methods by name.
    npu: Mapping[str, Stmt]
    #: vLLM's runner class's methods by name.
    base: Mapping[str, Stmt]


def _classes(sides: Sides) -> _Classes:
    npu = _methods(_class(sides.npu, sides.npu_class))
    base = _methods(_class(sides.base, sides.base_class))
    paths = {
        stmt.name: tree.path
        for tree in sides.omni.values()
        for stmt in tree.body.stmts
        if stmt.kind == "ClassDef"
    }
    return _Classes(index_classes(sides.omni, "gpu"), paths, npu, base)


def _rows(runner: str, chain: list[str], classes: _Classes, sides: Sides) -> Iterator[MethodRow]:
    index, npu, base = classes.index, classes.npu, classes.base
    omni_names = {name for cls in chain for name in _methods(index[cls].stmt)}
    rows = []
    for name in sorted(omni_names | set(npu) | set(base)):
        omni = _omni_site(runner, chain, name, classes) if name in omni_names else None
        npu_site = None
        if name in npu:
            delegates = calls_super(npu[name], name)
            npu_site = Site(sides.npu_class, sides.npu.path, npu[name].start, delegates)
        who = _who(omni is not None, npu_site is not None)
        base_line = base[name].start if name in base else 0
        rows.append(MethodRow(name, who, base_line, omni, npu_site))
    order = list(Who)
    yield from sorted(rows, key=lambda r: (order.index(r.who), r.name))


def _who(omni: bool, npu: bool) -> Who:
    if omni and npu:
        return Who.BOTH
    return Who.OMNI if omni else Who.NPU if npu else Who.NEITHER


def _omni_site(runner: str, chain: list[str], name: str, classes: _Classes) -> Site:
    """The omni override that runs first, and whether omni's code reaches past omni."""
    index, paths = classes.index, classes.paths
    definers = [cls for cls in chain if name in _methods(index[cls].stmt)]
    runs = resolve(runner, name, index)
    owner, method = runs[0][0].name, runs[0][1]
    last = definers[-1]
    delegates = any(cls.name == last and calls_super(m, name) for cls, m in runs)
    ran = tuple((cls.name, paths[cls.name], m.start) for cls, m in runs)
    return Site(owner, paths[owner], method.start, delegates, ran)


# --- findings -------------------------------------------------------------------------------


def _collisions(runners: list[RunnerReport], sides: Sides) -> Iterator[Finding]:
    """OP320 where both replace the method, OP323 where the NPU override wraps super()."""
    seen: set[tuple[str, str]] = set()
    for runner in runners:
        for row in runner.rows:
            if row.omni is None or row.npu is None:
                continue
            if not (row.collision or row.wrapper_collision):
                continue
            # An omni override that calls the omni base's through super() collides there.
            owner, path, line = row.omni.last
            if (owner, row.name) in seen:
                continue
            seen.add((owner, row.name))
            yield _collision(row, owner, path, line, sides)


def _collision(row: MethodRow, owner: str, path: str, line: int, sides: Sides) -> Finding:
    assert row.npu is not None
    npu = f"{sides.npu_class}.{row.name} ({row.npu.path}:{row.npu.line})"
    if row.wrapper_collision:
        message = (
            f"{npu} wraps super().{row.name}() and {owner}.{row.name} replaces the method: "
            "inheriting drops the NPU wrapper, and omni's code would not run inside it"
        )
        return Finding(Code.OP323, path, line, message)
    message = (
        f"{owner}.{row.name} and {npu} both override {row.name} and neither calls the other "
        "through super(): inheriting runs only one of them"
    )
    return Finding(Code.OP320, path, line, message)


def _calls(method: Stmt, name: str) -> bool:
    pattern = re.compile(rf"\bself\.{re.escape(name)}\(")
    return any(pattern.search(key) for key in diff.flat_keys(method.clauses[0]))


def _bypasses(runners: list[RunnerReport], classes: _Classes, sides: Sides) -> Iterator[Finding]:
    """NPU-only overrides that omni's replacement of every calling vLLM method skips."""
    index, base = classes.index, classes.base
    seen: set[tuple[str, str, str]] = set()
    modules = {
        stmt.name: module
        for module, tree in sides.omni.items()
        for stmt in tree.body.stmts
        if stmt.kind == "ClassDef"
    }
    for runner in runners:
        rows = {row.name: row for row in runner.rows}
        for name, row in rows.items():
            if row.who is not Who.NPU or row.npu is None:
                continue
            for caller, caller_method in base.items():
                replaced = rows.get(caller)
                site = replaced.omni if replaced is not None else None
                if site is None or site.delegates or not _calls(caller_method, name):
                    continue
                ran = resolve(runner.runner, caller, index)
                key = (site.owner, caller, name)
                if any(_calls(m, name) for _, m in ran) or key in seen:
                    continue
                seen.add(key)
                module = modules.get(site.owner, runner.module)
                finding = _bypass(site, caller, caller_method, name, row.npu, sides)
                yield reviewed_bypass(finding, sides.allowed, (module, site.owner, caller, name))


def _bypass(
    site: Site, caller: str, caller_method: Stmt, name: str, npu: Site, sides: Sides
) -> Finding:
    message = (
        f"{site.owner}.{caller} replaces {sides.base_class}.{caller} "
        f"({sides.base.path}:{caller_method.start}), which calls self.{name}(); "
        f"{sides.npu_class} overrides {name} ({npu.path}:{npu.line}) and omni's {caller} "
        "never calls it, so the NPU override does not run there"
    )
    return Finding(Code.OP321, site.path, site.line, message)


def reviewed_bypass(
    finding: Finding, allowed: Sequence[AllowEntry], key: tuple[str, str, str, str]
) -> Finding:
    """A bypass (OP321) a reviewed entry explains as a note citing it; else the error with
    the entry that would review it. ``key`` is (module, class, method, bypassed override):
    an entry naming the override, or one that keeps the method itself, reviews it."""
    module, owner, caller, name = key
    for entry in allowed:
        if (entry.module, entry.owner, entry.member) == (module, owner, caller) and (
            entry.selector in (name, "")
        ):
            message = f"{finding.message}; reviewed: {entry.reason} ({entry.path}:{entry.line})"
            return replace(finding, message=message, severity=Severity.NOTE)
    message = (
        f"{finding.message}: compose it by hand in vLLM-Omni, or review it with "
        f"`{module}:{owner}.{caller}:{name}  REASON` in --v2-allow"
    )
    return replace(finding, message=message, severity=Severity.ERROR)


def _calls_into(sides: Sides, index: ClassIndex) -> Iterator[Finding]:
    """OP322: omni's calls the NPU runner or vLLM's runner of the base cannot take."""
    targets: dict[str, calls.Target] = {}
    for tree, owner in ((sides.npu, sides.npu_class), (sides.base, sides.base_class)):
        for name, node in calls.methods_of(tree, owner).items():
            targets.setdefault(name, calls.Target(owner, tree.path, node.lineno, node.args))
    newer: dict[str, str] = {}
    for label, tree in sides.candidates.items():
        for name in calls.methods_of(tree, sides.base_class):
            if name not in targets:
                newer.setdefault(name, label)
    found = calls.call_findings(sides.omni, index, targets, newer, sides.base_label)
    yield from sorted(found, key=lambda f: (f.path, f.line, f.col))
