"""Rewrite omni's V2 code for the NPU: what vllm-ascend installs, CUDA-only checks, torch.cuda.

Four rewrites, each a rule of its own, of the text of one omni piece (libcst, so comments
and layout stay byte for byte around them):

- ``ascend-patch``: an import of a vLLM object a vllm-ascend patch_v2 module replaces
  imports what the patch installs instead (omni's ``from vllm...dp_utils import
  dispatch_cg_and_sync_dp`` would bypass vllm-ascend's);
- ``device-neutral``: ``t.device.type == "cuda"`` becomes ``t.device.type != "cpu"`` and
  ``t.is_cuda`` becomes ``t.device.type != "cpu"`` (both are false on an NPU);
- ``torch-cuda``: nothing is rewritten; a ``torch.cuda.X`` call runs on the NPU only
  because vllm-ascend's V2 runner points ``torch.cuda.X`` at ``torch.npu.X``, and the tag
  says so where the call is (or that ``X`` is not redirected);
- ``communicator-switch``: a ``with`` that enters vLLM's ``graph_capture`` enters
  vllm-ascend's ``communicator_switch()`` right before it, imported on the line above
  (``v2.capture``). A helper the piece does not import itself is not recognised here;
  ``checks`` reports it on the whole module.

Every rewrite leaves a tag on its statement, a trailing comment ``# omni-port: RULE:
what``: the generated file says what changed and why, and the pipeline reports and locks
every tag it finds there.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ExpressionContext, ExpressionContextProvider, ParentNodeProvider

from omni_port.model import Rule
from omni_port.v2 import capture
from omni_port.v2.ascend import AscendPatches, Substitution

#: How every tag starts.
TAG = "# omni-port: "
#: How a tag wrapped onto more comment lines goes on (``tidy`` wraps, ``checks.tags`` joins).
CONTINUATION = "#   "
#: The tag of a statement that relies on torch.cuda -> torch.npu (not a rewrite).
TORCH_CUDA = "torch-cuda"
#: Words that mark a tag as a problem, not a note.
NOT_REDIRECTED = "has no NPU redirection"
KEPT = "kept vLLM's"


@dataclass(frozen=True, slots=True)
class Options:
    """What one rewrite of a piece knows."""

    patches: AscendPatches
    #: The piece is a fragment of a function body (a spliced hunk): it runs at call time.
    in_function: bool = False
    #: Apply the device-neutral rule (off for vllm-ascend's own code).
    device: bool = True


def tag(rule: str, what: str) -> str:
    """The trailing comment that records a rewrite on its statement."""
    return f"{TAG}{rule}: {what}"


def parse_piece(code: str, owner: str = "") -> tuple[cst.Module, str] | None:
    """A piece's code parsed (with a ``class`` line above indented code so it parses), and
    that added prefix; None when it does not parse (a signature or a header fragment)."""
    first = next((ln for ln in code.splitlines() if ln.strip() and ln.lstrip()[:1] != "#"), "")
    prefix = f"class {owner or '_'}:\n" if first[:1] in (" ", "\t") else ""
    try:
        return cst.parse_module(prefix + code), prefix
    except cst.ParserSyntaxError:
        return None


def render_piece(module: cst.Module, prefix: str) -> str:
    return module.code[len(prefix) :]


def rewrite(code: str, options: Options, owner: str = "") -> str:
    """``code`` rewritten by the four rules, tagged; unchanged when it does not parse."""
    parsed = parse_piece(code, owner)
    if parsed is None:
        return code
    module, prefix = parsed
    return render_piece(rewrite_module(module, options), prefix)


def rewrite_module(module: cst.Module, options: Options) -> cst.Module:
    """A parsed piece rewritten by the four rules, each change tagged on its statement."""
    wrapper = cst.MetadataWrapper(module)
    return wrapper.visit(_Rewriter(options, wrapper.module))


# --- the transformer ------------------------------------------------------------------------

_SAFE_PARENTS = (
    cst.Return,
    cst.Assign,
    cst.AnnAssign,
    cst.If,
    cst.While,
    cst.BooleanOperation,
    cst.Arg,
    cst.IfExp,
    cst.Assert,
)


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (ParentNodeProvider, ExpressionContextProvider)

    def __init__(self, options: Options, module: cst.Module) -> None:
        super().__init__()
        self.options = options
        self.module = module
        #: Tags per open statement, innermost last.
        self.frames: list[list[str]] = []
        self.annotations = 0
        self.functions = 1 if options.in_function else 0
        try:
            self.capture = capture.names_of(ast.parse(module.code))
        except (SyntaxError, ValueError):
            self.capture = capture.Names()

    # statements carry the tags of what was rewritten in them

    def on_visit(self, node: cst.CSTNode) -> bool:
        if _has_line(node):
            self.frames.append([])
        if isinstance(node, cst.Annotation):
            self.annotations += 1
        if isinstance(node, cst.FunctionDef | cst.Lambda):
            self.functions += 1
        return super().on_visit(node)

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        if isinstance(original_node, cst.Annotation):
            self.annotations -= 1
        if isinstance(original_node, cst.FunctionDef | cst.Lambda):
            self.functions -= 1
        result = super().on_leave(original_node, updated_node)
        if _has_line(original_node):
            tags = self.frames.pop()
            if tags and isinstance(result, cst.FlattenSentinel):
                first, *rest = list(result)
                return cst.FlattenSentinel([tagged(first, _merged(tags)), *rest])
            if tags and isinstance(result, cst.CSTNode):
                return tagged(result, _merged(tags))
        return result

    def _note(self, text: str) -> None:
        if self.frames and text not in self.frames[-1]:
            self.frames[-1].append(text)

    # ascend-patch

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.ImportFrom):
            return updated_node
        return _substituted(updated_node, updated_node.body[0], self.options.patches, self._note)

    # communicator-switch

    def leave_With(
        self, original_node: cst.With, updated_node: cst.With
    ) -> cst.With | cst.FlattenSentinel[cst.BaseStatement]:
        switch = self.options.patches.switch
        if switch is None:
            return updated_node
        found = _first_unswitched(updated_node, self.module, self.capture)
        if found is None:
            return updated_node
        index, helper = found
        local = min(self.capture.switches, default=capture.SWITCH)
        entered = cst.WithItem(
            cst.Call(cst.Name(local)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        items = [*updated_node.items[:index], entered, *updated_node.items[index:]]
        what = (
            f"vLLM's {helper} asserts a CUDA or XPU communicator when TP, DP or PP > 1: "
            f"entered inside vllm-ascend's {capture.SWITCH} ({switch.where}), as vllm-ascend's "
            "own V2 graph capture does"
        )
        node = tagged(updated_node.with_changes(items=items), tag(Rule.COMMUNICATOR_SWITCH, what))
        assert isinstance(node, cst.With)
        if self.capture.switches:
            return node
        # The import goes above the comments that lead the statement, below the blank lines.
        leading = list(node.leading_lines)
        blank = next((i for i, ln in enumerate(leading) if ln.comment is not None), len(leading))
        line = cst.parse_statement(f"from {switch.module} import {capture.SWITCH}\n")
        assert isinstance(line, cst.SimpleStatementLine)
        return cst.FlattenSentinel(
            [
                line.with_changes(leading_lines=leading[:blank]),
                node.with_changes(leading_lines=leading[blank:]),
            ]
        )

    # device-neutral

    def leave_Comparison(
        self, original_node: cst.Comparison, updated_node: cst.Comparison
    ) -> cst.BaseExpression:
        if not self.options.device:
            return updated_node
        flipped = _neutral_comparison(updated_node)
        if flipped is None:
            return updated_node
        self._note(tag(Rule.DEVICE_NEUTRAL, f"was `{self.module.code_for_node(original_node)}`"))
        return flipped

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        self._torch_cuda(original_node)
        if not self.options.device or original_node.attr.value != "is_cuda":
            return updated_node
        context = self.get_metadata(ExpressionContextProvider, original_node, None)
        if context is ExpressionContext.STORE or self.annotations:
            return updated_node
        parent = self.get_metadata(ParentNodeProvider, original_node, None)
        self._note(tag(Rule.DEVICE_NEUTRAL, f"was `{self.module.code_for_node(original_node)}`"))
        return _on_accelerator(updated_node.value, not isinstance(parent, _SAFE_PARENTS))

    # torch-cuda

    def _torch_cuda(self, node: cst.Attribute) -> None:
        if self.annotations or not _is_torch_cuda(node):
            return
        name = node.attr.value
        cuda = self.options.patches.cuda
        where = f"{cuda.path}:{cuda.line}" if cuda is not None else ""
        if cuda is None or not cuda.entered or name not in cuda.names:
            self._note(tag(TORCH_CUDA, f"torch.cuda.{name} {NOT_REDIRECTED}"))
        elif not self.functions:
            self._note(
                tag(TORCH_CUDA, f"torch.cuda.{name} at import time {NOT_REDIRECTED} yet ({where})")
            )
        else:
            self._note(
                tag(
                    TORCH_CUDA,
                    f"torch.cuda.{name} runs as torch.npu.{name} through vllm-ascend's "
                    f"torch_cuda_wrapper ({where}, entered by NPUModelRunner.__init__)",
                )
            )


def _first_unswitched(
    node: cst.With, module: cst.Module, names: capture.Names
) -> tuple[int, str] | None:
    """The index of the first item of ``node`` that calls vLLM's capture helper with no
    switch entered before it, and the helper as written."""
    for index, item in enumerate(node.items):
        try:
            expr = ast.parse(module.code_for_node(item.item).strip(), mode="eval").body
        except (SyntaxError, ValueError):
            return None
        if capture.switch_call(expr, names):
            return None
        if isinstance(expr, ast.Call):
            helper = capture.helper_call(expr, names)
            if helper:
                return index, helper
    return None


def _has_line(node: cst.CSTNode) -> bool:
    """A statement that can carry a trailing comment: a simple line or a compound header."""
    if isinstance(node, cst.SimpleStatementLine):
        return True
    body = getattr(node, "body", None)
    return isinstance(body, cst.IndentedBlock | cst.SimpleStatementSuite) and not isinstance(
        node, cst.Module
    )


def _merged(tags: Sequence[str]) -> str:
    return "  ".join(tags)


def tagged(node: cst.CSTNode, text: str) -> cst.CSTNode:
    """``node`` with ``text`` as the trailing comment of its line (its header's, for a
    compound statement), after any comment already there."""
    if isinstance(node, cst.SimpleStatementLine):
        return node.with_changes(trailing_whitespace=_comment(node.trailing_whitespace, text))
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return node.with_changes(body=body.with_changes(header=_comment(body.header, text)))
    if isinstance(body, cst.SimpleStatementSuite):
        trailing = _comment(body.trailing_whitespace, text)
        return node.with_changes(body=body.with_changes(trailing_whitespace=trailing))
    return node


def _comment(whitespace: cst.TrailingWhitespace, text: str) -> cst.TrailingWhitespace:
    if whitespace.comment is not None:
        return whitespace.with_changes(comment=cst.Comment(f"{whitespace.comment.value}  {text}"))
    return whitespace.with_changes(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text))


# --- the rules ------------------------------------------------------------------------------


def _dotted(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def _substituted(
    line: cst.SimpleStatementLine,
    node: cst.ImportFrom,
    patches: AscendPatches,
    note: Callable[[str], None],
) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
    module = _dotted(node.module)
    if node.relative or not module or isinstance(node.names, cst.ImportStar):
        return line
    kept: list[cst.ImportAlias] = []
    added: list[cst.SimpleStatementLine] = []
    for alias in node.names:
        name = _dotted(alias.name)
        found = patches.replacing((module, name))
        local = alias.asname.name.value if alias.asname is not None else name  # type: ignore[union-attr]
        if found is None:
            kept.append(alias)
        elif found.doubt:
            kept.append(alias)
            note(tag(Rule.ASCEND_PATCH, f"{KEPT} {module}.{name}: {_doubt(found)}"))
        else:
            added.append(_import_line(found, local, patches))
    if not added:
        return line
    lines: list[cst.SimpleStatementLine] = []
    if kept:
        names = [*kept[:-1], kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        lines.append(line.with_changes(body=[node.with_changes(names=names)]))
    else:
        added[0] = added[0].with_changes(leading_lines=line.leading_lines)
    return cst.FlattenSentinel([*lines, *added])


def _doubt(found: Substitution) -> str:
    return f"{found.path}:{found.line} replaces it {found.doubt}"


def _import_line(
    found: Substitution, local: str, patches: AscendPatches
) -> cst.SimpleStatementLine:
    module, name = found.replacement
    alias = f" as {local}" if local != name else ""
    statement = cst.parse_statement(f"from {module} import {name}{alias}\n")
    assert isinstance(statement, cst.SimpleStatementLine)
    what = (
        f"vllm-ascend {patches.installed(found)}; omni imported vLLM's "
        f"{found.original[0]}.{found.original[1]}, this imports the replacement"
    )
    return statement.with_changes(
        trailing_whitespace=_comment(statement.trailing_whitespace, tag(Rule.ASCEND_PATCH, what))
    )


def _is_string(node: cst.BaseExpression, value: str) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == value


def _is_device_type(node: cst.BaseExpression) -> bool:
    """``x.type`` or ``getattr(x, "type", ...)``: a device type, as omni reads it."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "type"
    if isinstance(node, cst.Call) and _dotted(node.func) == "getattr" and len(node.args) >= 2:
        return _is_string(node.args[1].value, "type")
    return False


def _neutral_comparison(node: cst.Comparison) -> cst.Comparison | None:
    """``<device type> ==/!= "cuda"`` as the negated comparison with ``"cpu"``."""
    if len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    operator = target.operator
    if not isinstance(operator, cst.Equal | cst.NotEqual):
        return None
    flipped: cst.BaseCompOp = (
        cst.NotEqual(
            whitespace_before=operator.whitespace_before, whitespace_after=operator.whitespace_after
        )
        if isinstance(operator, cst.Equal)
        else cst.Equal(
            whitespace_before=operator.whitespace_before, whitespace_after=operator.whitespace_after
        )
    )
    if _is_string(target.comparator, "cuda") and _is_device_type(node.left):
        cpu = _cpu_like(target.comparator)
        return node.with_changes(
            comparisons=[target.with_changes(operator=flipped, comparator=cpu)]
        )
    if _is_string(node.left, "cuda") and _is_device_type(target.comparator):
        return node.with_changes(
            left=_cpu_like(node.left), comparisons=[target.with_changes(operator=flipped)]
        )
    return None


def _cpu_like(literal: cst.BaseExpression) -> cst.SimpleString:
    """``"cpu"`` in the quotes of the ``"cuda"`` literal it replaces."""
    assert isinstance(literal, cst.SimpleString)
    quote = literal.value[-1]
    return literal.with_changes(value=f"{quote}cpu{quote}")


def _on_accelerator(value: cst.BaseExpression, parenthesized: bool) -> cst.Comparison:
    """``value.device.type != "cpu"``."""
    device = cst.Attribute(value=value, attr=cst.Name("device"))
    left = cst.Attribute(value=device, attr=cst.Name("type"))
    target = cst.ComparisonTarget(operator=cst.NotEqual(), comparator=cst.SimpleString('"cpu"'))
    comparison = cst.Comparison(left=left, comparisons=[target])
    if parenthesized:
        return comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return comparison


def _is_torch_cuda(node: cst.Attribute) -> bool:
    return _dotted(node.value) == "torch.cuda"
