"""Checks of generated V2 runners against omni's, the NPU runner and what vllm-ascend installs.

Run by ``v2-sync`` on what it generates and by ``verify`` on the files on disk, so a tree
edited by hand is judged the same way:

- OP329: through the class chain (``walk``), every NPU override a generated class
  overrides runs exactly once per call (itself, a copy of it, or the NPU wrapper around
  omni's code), and omni's renamed override runs exactly once; an NPU override that never
  runs is an error unless a conflict region or an ``allowed`` comment above the method
  says why;
- OP325: no import of a vLLM object that a vllm-ascend patch replaces (errors); each
  substitution the generated file records is a note;
- OP326: no CUDA-only device check left (errors); each device-neutral rewrite is a note;
- OP327: every runtime ``torch.cuda.X`` is one vllm-ascend's runner redirects to
  ``torch.npu`` (else an error); each reliance the file states is a note;
- OP328: every class of omni's modules is there, and each of its methods keeps omni's
  signature (parameters, annotations, defaults, return annotation);
- OP321: no generated runner replaces a vLLM method that calls an NPU override without
  calling it too, unless the allow-list says why (``module.py:Class.method:npu_method``, or
  the method itself is an ``allowed`` one): a bypassed NPU override is an error;
- OP330: no class of the generated modules, nor of omni's modules they import (which the
  installed vLLM-Omni serves), is built on a vLLM class vllm-ascend substitutes, unless
  allow-listed (``module.py:Class.<vLLM class>``); each rebase is a note;
- OP332: no call of vLLM's class (or factory) where vllm-ascend's runner installs its own
  (``NPUModelRunner.__init__``'s ``AscendInputBuffers``, a graph-manager wrapper's factory);
- OP334: the NPU worker's warm-up calls no runner method but the model steps a generation
  worker skips (else an error; a note when it cannot be read);
- OP333: every condition an allow-list entry requires (``[requires: NAME]``) is one
  omni-port knows, and holds in the generated modules where it can be seen there;
- OP331: no call of vLLM's CUDA graph capture helpers (``graph_capture``) outside a ``with``
  that entered vllm-ascend's ``communicator_switch()`` first (errors: vLLM asserts a CUDA or
  XPU communicator when TP, DP or PP > 1); each switch the file records is a note.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from omni_port.gpu.parity import AllowEntry
from omni_port.model import CONFLICT_OPEN, Code, Finding, Rule, Severity
from omni_port.pyast.parser import module_or_none
from omni_port.v2 import (
    capture,
    conditions,
    dead,
    instances,
    overrides,
    rewrite,
    stage,
    substitute,
)
from omni_port.v2.ascend import WORKER, AscendPatches
from omni_port.v2.walk import Visit, World, own_calls, runs, walk
from omni_port.v2.wrap import body_name

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True)
class Against:
    """What generated V2 modules are checked against."""

    #: The NPU runner module: its text, path (label) and runner class.
    npu_text: str
    npu_path: str
    npu_class: str
    #: vLLM's V2 runner module, text and path.
    base_text: str
    base_path: str
    #: omni's modules the generated ones stand in for, by output path (the runner modules
    #: and the modules whose classes are rebased onto a substitute).
    omni: Mapping[str, str]
    patches: AscendPatches = field(default_factory=AscendPatches)
    #: vllm-ascend's substitute modules and vLLM's original modules, by member path.
    classes: Mapping[str, str] = field(default_factory=dict)
    #: omni's package sources by member path (None: not at hand).
    omni_texts: Mapping[str, str] | None = None
    allowed: tuple[AllowEntry, ...] = ()
    #: omni's V2 package directory, which output paths are relative to.
    package_dir: str = "vllm_omni/worker_v2/"

    def world(self, modules: Mapping[str, str]) -> World:
        """The generated modules, the NPU runner, vLLM's runner and the substitutes' modules
        (the generated definitions first)."""
        return World(
            {
                **modules,
                self.npu_path: self.npu_text,
                self.base_path: self.base_text,
                **self.classes,
            }
        )

    def families(self) -> list[str]:
        """The NPU classes whose overrides must run: the runner and every substitute."""
        found = [self.npu_class]
        found += [s.substitute[1] for s in self.patches.substitutes if not s.doubt]
        return found


def check(modules: Mapping[str, str], against: Against) -> list[Finding]:
    """Every V2 finding about the generated ``modules`` (output path -> text), sorted."""
    trees = {name: module_or_none(text) for name, text in modules.items()}
    parsed = {name: tree for name, tree in trees.items() if tree is not None}
    findings = [
        *tag_findings(modules),
        *npu_runs(modules, against),
        *patched_methods(modules, against),
        *leftovers(parsed, against.patches),
        *api_findings(parsed, against.omni),
        *bypassed_overrides(modules, against),
        *substitute_findings(parsed, against),
        *capture_findings(parsed, against.patches),
        *condition_findings(parsed, against.allowed),
        *instance_findings(parsed, against),
        *warm_up_findings(parsed, against.patches),
        *dead.findings(
            parsed, {"vllm": against.base_text, "npu": against.npu_text}, against.npu_class
        ),
    ]
    return sorted(findings, key=lambda f: (f.path, f.line, f.col, f.code, f.message))


# --- what the file records ------------------------------------------------------------------

_NOTES = {
    str(Rule.ASCEND_PATCH): Code.OP325,
    str(Rule.DEVICE_NEUTRAL): Code.OP326,
    rewrite.TORCH_CUDA: Code.OP327,
    str(Rule.SUBSTITUTE): Code.OP330,
    str(Rule.GUARD): Code.OP329,
    str(Rule.COMMUNICATOR_SWITCH): Code.OP331,
}


def tags(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, rule, what) of every ``# omni-port: RULE: what`` comment of a module."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    comments = [t for t in tokens if t.type == tokenize.COMMENT]
    for index, token in enumerate(comments):
        if rewrite.TAG not in token.string:
            continue
        text = token.string + _continued(comments[index + 1 :], token)
        for part in text.split(rewrite.TAG)[1:]:
            rule, _, what = part.partition(": ")
            yield token.start[0], rule.strip(), what.strip()


def _continued(following: Sequence[tokenize.TokenInfo], tag: tokenize.TokenInfo) -> str:
    """The text of the comment lines right below a tag that continue it (``tidy`` wraps)."""
    text = ""
    line = tag.start[0]
    for token in following:
        if token.start[0] != line + 1 or not token.string.startswith(rewrite.CONTINUATION):
            break
        if token.line[: token.start[1]].strip():
            break  # a trailing comment of the next statement
        text += " " + token.string[len(rewrite.CONTINUATION) :].strip()
        line += 1
    return text


def tag_findings(modules: Mapping[str, str]) -> Iterator[Finding]:
    """A note per rewrite the generated files record (their errors come from the code)."""
    for name in sorted(modules):
        for line, rule, what in tags(modules[name]):
            code = _NOTES.get(rule)
            if code is None or rewrite.NOT_REDIRECTED in what:
                continue
            yield Finding(code, name, line, f"{rule}: {what}", severity=Severity.NOTE)


# --- the NPU overrides run once -------------------------------------------------------------


def npu_runs(modules: Mapping[str, str], against: Against) -> Iterator[Finding]:
    """OP329 for the generated classes on the NPU runner and on each substitute."""
    world = against.world(modules)
    generated = modules_classes(world, modules)
    for family in against.families():
        npu = world.classes.get(family)
        if npu is None:
            continue
        for runner in sorted(generated):
            if family not in world.mro(runner)[1:]:
                continue
            for name in sorted(npu.methods):
                entry = world.resolve(runner, name)
                if entry is None or entry.module not in modules:
                    continue
                yield from _runs(world, runner, name, modules, family)


def patched_methods(modules: Mapping[str, str], against: Against) -> Iterator[Finding]:
    """OP325 where a generated runner overrides a method a vllm-ascend patch installs on
    vLLM's class (``GPUModelRunner.initialize_kv_cache = ...``) and never reaches it."""
    world = against.world(modules)
    seen: set[tuple[str, int]] = set()
    for patch in against.patches.class_patches:
        owner = patch.owner[1]
        for runner in sorted(modules_classes(world, modules)):
            entry = world.resolve(runner, patch.attribute)
            if owner not in world.mro(runner) or entry is None or entry.module not in modules:
                continue
            visits = walk(world, runner, patch.attribute)
            if any(v.owner in (owner, against.npu_class) for v in visits):
                continue
            line = _def_line(visits[0].node)
            if (visits[0].module, line) in seen:
                continue  # one override, inherited by several runners
            seen.add((visits[0].module, line))
            message = (
                f"{runner}.{patch.attribute} replaces {owner}.{patch.attribute}, which "
                f"vllm-ascend patches ({patch.path}:{patch.line}), and never calls it: the "
                "patched method does not run"
            )
            yield Finding(Code.OP325, visits[0].module, line, message)


def modules_classes(world: World, modules: Mapping[str, str]) -> set[str]:
    return {name for name, known in world.classes.items() if known.module in modules}


def _runs(
    world: World,
    runner: str,
    name: str,
    modules: Mapping[str, str],
    npu_class: str,
) -> Iterator[Finding]:
    found = runs(world, runner, name, npu_class, set(modules))
    visits = found.visits
    entry = visits[0]
    line = _def_line(entry.node)
    marked = any(
        _marked(modules[v.module], _def_line(v.node)) for v in visits if v.module in modules
    )
    if not found.npu and not marked:
        message = (
            f"{runner}.{name}: {npu_class}.{name} never runs (omni's {entry.owner}.{name} "
            "shadows it) and no conflict region or allow-list comment above omni's code for "
            "it says why"
        )
        yield Finding(Code.OP329, entry.module, line, message)
    elif len(found.npu) > 1:
        message = (
            f"{runner}.{name}: {npu_class}.{name} (or its copy) runs {len(found.npu)} times "
            "per call"
        )
        yield Finding(Code.OP329, entry.module, line, message)
    renamed = body_name(name)
    if world.resolve(runner, renamed) is not None and len(found.bodies) != 1:
        message = (
            f"{runner}.{name}: omni's {renamed} runs {len(found.bodies)} times per call, not once"
        )
        yield Finding(Code.OP329, entry.module, line, message)


def _def_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


# --- NPU overrides omni's replacements skip --------------------------------------------------


def bypassed_overrides(modules: Mapping[str, str], against: Against) -> Iterator[Finding]:
    """OP321 where a generated runner's method replaces a vLLM method that calls an NPU
    override, and nothing the method runs calls it: an error unless reviewed. Only the
    method's own definitions are read (what it delegates to through other methods is not:
    a call made there is an entry to review, not a pass)."""
    world = against.world(modules)
    base = _class_node(against.base_text, _base_class(world, against.npu_class))
    if base is None:
        return
    seen: set[tuple[str, str, str]] = set()
    for runner in sorted(modules_classes(world, modules)):
        if against.npu_class not in world.mro(runner)[1:]:
            continue
        for caller in base.body:
            if not isinstance(caller, _FUNCTIONS):
                continue
            entry = world.resolve(runner, caller.name)
            if entry is None or entry.module not in modules:
                continue
            visits = walk(world, runner, caller.name)
            called = {name for visit in visits for name in _self_calls(visit.node)}
            for name in sorted(_self_calls(caller) - called):
                reached = world.resolve(runner, name)
                if reached is None or reached.name != against.npu_class:
                    continue
                first = visits[0]
                key = (first.owner, caller.name, name)
                if key in seen:
                    continue
                seen.add(key)
                yield _bypassed(first, caller.name, name, modules, against)


def _bypassed(
    first: Visit, caller: str, name: str, modules: Mapping[str, str], against: Against
) -> Finding:
    message = (
        f"{first.owner}.{caller} replaces vLLM's {caller}, which calls self.{name}(); "
        f"{against.npu_class} overrides {name} and nothing {first.owner}.{caller} runs calls "
        "it, so the NPU override does not run there"
    )
    finding = Finding(Code.OP321, first.module, _def_line(first.node), message)
    key = (first.module, first.owner, caller, name)
    return overrides.reviewed_bypass(finding, against.allowed, key)


def _base_class(world: World, npu_class: str) -> str:
    npu = world.classes.get(npu_class)
    return npu.bases[0] if npu is not None and npu.bases else ""


def _class_node(text: str, name: str) -> ast.ClassDef | None:
    tree = module_or_none(text)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _self_calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names of the ``self.<name>(...)`` calls of a function's own body."""
    return {
        call.func.attr
        for call in own_calls(node)
        if isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
    }


# --- classes built on what vllm-ascend substitutes --------------------------------------------


def substitute_findings(parsed: Mapping[str, ast.Module], against: Against) -> Iterator[Finding]:
    """OP330 for each class of the generated modules built on a substituted vLLM class, and
    for each one of omni's modules the generated ones import (served by the installed
    vLLM-Omni, not by this tree), reported at the import."""
    patches = against.patches
    for name, tree in sorted(parsed.items()):
        for bypass in substitute.bypasses_of(tree, name, patches):
            allow = substitute.kept(bypass, against.allowed, against.package_dir)
            yield substitute.bypass_finding(bypass, "", allow)
    texts = against.omni_texts
    if texts is None:
        return
    for name, tree in sorted(parsed.items()):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vllm_omni."):
                yield from _imported_bypasses(name, node, parsed, against, texts)


def _imported_bypasses(
    name: str,
    node: ast.ImportFrom,
    parsed: Mapping[str, ast.Module],
    against: Against,
    texts: Mapping[str, str],
) -> Iterator[Finding]:
    path = substitute.module_path(node.module or "", texts)
    if not path or substitute.output_path(path, against.package_dir) in parsed:
        return  # not omni's, or generated here (and checked as such)
    tree = module_or_none(texts[path])
    if tree is None:
        return
    imported = {alias.name for alias in node.names}
    for bypass in substitute.bypasses_of(tree, path, against.patches):
        if bypass.owner not in imported:
            continue
        allow = substitute.kept(bypass, against.allowed, against.package_dir)
        why = (
            f"{name} imports it from the installed vLLM-Omni ({path}), which this tree does "
            "not rebase"
        )
        found = substitute.bypass_finding(bypass, why, allow)
        yield Finding(
            found.code, name, node.lineno, found.message, node.col_offset + 1, found.severity
        )


def _marked(text: str, line: int) -> bool:
    """Whether the comment lines right above ``line`` hold a conflict region or an
    ``allowed`` comment."""
    lines = text.split("\n")
    number = line - 2
    while number >= 0 and lines[number].lstrip().startswith("#"):
        stripped = lines[number].lstrip()
        if stripped.startswith(CONFLICT_OPEN) or stripped.startswith(rewrite.tag(Rule.ALLOWED, "")):
            return True
        number -= 1
    return False


# --- what must not be left ------------------------------------------------------------------


def leftovers(parsed: Mapping[str, ast.Module], patches: AscendPatches) -> Iterator[Finding]:
    for name, tree in sorted(parsed.items()):
        annotations = _annotation_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                yield from _replaced_import(name, node, patches)
            elif isinstance(node, ast.Compare) and _cuda_check(node):
                yield _finding(
                    Code.OP326, name, node, "a CUDA-only device check (false on the NPU)"
                )
            elif isinstance(node, ast.Attribute) and id(node) not in annotations:
                yield from _attribute(name, node, patches)


def capture_findings(parsed: Mapping[str, ast.Module], patches: AscendPatches) -> Iterator[Finding]:
    """OP331 for each call of vLLM's CUDA graph capture helpers that no ``with`` entering
    vllm-ascend's ``communicator_switch()`` encloses: on the NPU, with TP, DP or PP > 1, vLLM
    asserts a CUDA or XPU communicator there."""
    switch = patches.switch
    how = (
        f"enter vllm-ascend's {capture.SWITCH}() ({switch.where}) before it"
        if switch is not None
        else f"vllm-ascend's V2 package has no {capture.SWITCH} to enter before it"
    )
    for name, tree in sorted(parsed.items()):
        for call, helper in capture.unswitched(tree):
            what = (
                f"{helper}(...) is vLLM's CUDA graph capture helper, outside vllm-ascend's "
                f"communicator switch: with TP, DP or PP > 1 it asserts a CUDA or XPU "
                f"communicator on the NPU; {how}"
            )
            yield Finding(Code.OP331, name, call.lineno, what, call.col_offset + 1)


def instance_findings(parsed: Mapping[str, ast.Module], against: Against) -> Iterator[Finding]:
    """OP332 at each call of vLLM's class (or factory) where vllm-ascend's runner installs
    its own: in its ``__init__``, or through a graph-manager wrapper (``instances``)."""
    found = instances.installed(
        against.npu_text,
        against.npu_path,
        against.npu_class,
        against.base_text,
        against.base_path,
        overrides.BASE_CLASS,
    )
    return instances.findings(parsed, found)


#: The generated module of the generation (Code2Wav) runner, whose worker warms up apart.
GENERATION_MODULE = "omni_generation_model_runner.py"


def warm_up_findings(parsed: Mapping[str, ast.Module], patches: AscendPatches) -> Iterator[Finding]:
    """OP334 when a generation worker's warm-up cannot keep the NPU worker's steps: the
    switch runs the NPU worker's warm-up with the model steps (``stage.MODEL_STEPS``)
    skipped, so any other runner method it calls would run the generation model."""
    if GENERATION_MODULE not in parsed:
        return
    warm_up = patches.warm_up
    if warm_up is None:
        path, class_name, method = WORKER
        what = (
            f"{class_name}.{method} ({path}) could not be read: whether a generation worker's "
            "warm-up keeps its steps without running the model is not checked"
        )
        yield Finding(Code.OP334, GENERATION_MODULE, 0, what, severity=Severity.NOTE)
        return
    for name in (n for n in warm_up.calls if n not in stage.MODEL_STEPS):
        what = (
            f"the NPU worker's warm-up ({warm_up.path}:{warm_up.line}) calls "
            f"self.model_runner.{name}(), which the switch does not skip: a generation V2 "
            f"worker would run it on the generation runner (it skips only "
            f"{', '.join(stage.MODEL_STEPS)})"
        )
        yield Finding(Code.OP334, GENERATION_MODULE, 0, what)


def condition_findings(
    parsed: Mapping[str, ast.Module], allowed: Sequence[AllowEntry]
) -> Iterator[Finding]:
    """OP333 at each allow-list entry that requires a condition omni-port does not know, or
    one the generated modules break (a stage's configuration is the runtime switch's). An
    entry about a module the tree does not hold decides nothing here (OP005 says so)."""
    for entry in (a for a in allowed if a.module in parsed):
        for name in conditions.unknown(entry.reason):
            known = ", ".join(c.value for c in conditions.Condition)
            what = f"requires {name!r}, which is no condition omni-port checks (known: {known})"
            yield Finding(Code.OP333, entry.path, entry.line, what)
        for condition in sorted(conditions.required([entry.reason])):
            why = conditions.unmet(condition, parsed)
            if why:
                what = f"requires {condition}, which does not hold: {why}"
                yield Finding(Code.OP333, entry.path, entry.line, what)


def _finding(code: Code, module: str, node: ast.expr | ast.stmt, what: str) -> Finding:
    return Finding(code, module, node.lineno, f"{ast.unparse(node)}: {what}", node.col_offset + 1)


def _replaced_import(
    module: str, node: ast.ImportFrom, patches: AscendPatches
) -> Iterator[Finding]:
    for alias in node.names:
        found = patches.replacing((node.module or "", alias.name))
        if found is not None and not found.doubt:
            message = (
                f"vllm-ascend {patches.installed(found)}; this import of "
                f"{node.module}.{alias.name} bypasses it"
            )
            yield Finding(Code.OP325, module, node.lineno, message, node.col_offset + 1)


def _cuda_check(node: ast.Compare) -> bool:
    """A device type compared with ``"cuda"`` in any form (``==``, ``in ("cuda", ...)``)."""
    sides = (node.left, *node.comparators)
    cuda = any(
        isinstance(inner, ast.Constant) and inner.value == "cuda"
        for side in sides
        for inner in ast.walk(side)
    )
    return cuda and any(_device_type(s) for s in sides)


def _device_type(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "type"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "type"
    )


def _attribute(module: str, node: ast.Attribute, patches: AscendPatches) -> Iterator[Finding]:
    if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
        yield _finding(Code.OP326, module, node, "a CUDA-only device check (false on the NPU)")
    elif ast.unparse(node.value) == "torch.cuda":
        cuda = patches.cuda
        if cuda is None or not cuda.entered or node.attr not in cuda.names:
            what = "vllm-ascend's V2 runner does not redirect it to torch.npu"
            yield _finding(Code.OP327, module, node, what)


def _annotation_nodes(tree: ast.Module) -> set[int]:
    """ids of every node inside an annotation (not evaluated at run time here)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, _FUNCTIONS):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            if annotation is not None:
                found.update(id(inner) for inner in ast.walk(annotation))
    return found


# --- omni's API -----------------------------------------------------------------------------


def api_findings(parsed: Mapping[str, ast.Module], omni: Mapping[str, str]) -> Iterator[Finding]:
    """OP328 where a generated module lacks a class of omni's module, or changes a method."""
    for name in sorted(omni):
        theirs = module_or_none(omni[name])
        mine = parsed.get(name)
        if theirs is None or mine is None:
            continue
        generated = {n.name: n for n in mine.body if isinstance(n, ast.ClassDef)}
        for cls in (n for n in theirs.body if isinstance(n, ast.ClassDef)):
            if cls.name not in generated:
                yield Finding(Code.OP328, name, 1, f"class {cls.name} of omni's module is missing")
                continue
            yield from _methods_kept(name, cls, generated[cls.name])


def _methods_kept(module: str, theirs: ast.ClassDef, mine: ast.ClassDef) -> Iterator[Finding]:
    defined = {m.name: m for m in mine.body if isinstance(m, _FUNCTIONS)}
    for method in (m for m in theirs.body if isinstance(m, _FUNCTIONS)):
        found = defined.get(method.name)
        if found is None:
            message = f"{theirs.name}.{method.name} of omni's class is missing"
            yield Finding(Code.OP328, module, mine.lineno, message)
        elif signature(found) != signature(method):
            message = (
                f"{theirs.name}.{method.name} is `{signature(found)}` here, "
                f"`{signature(method)}` in omni's class"
            )
            yield Finding(Code.OP328, module, found.lineno, message)


def signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``(params) -> returns`` as written (annotations and defaults included)."""
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"({ast.unparse(node.args)}){returns}"
