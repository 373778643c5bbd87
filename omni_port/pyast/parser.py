"""Parse Python text into a statement tree: the one entry point to both parsers.

libcst (structure and comments) loads on the first parse, so commands that parse nothing
start fast; the CPython parser gives positions and keys (see ``syntax``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from omni_port.model import Code, Finding
from omni_port.pyast import memo
from omni_port.pyast.syntax import Tree, dedent_code, syntax_error

#: How deeply a syntax tree omni-port reads may nest (a module is level 1). Real modules
#: stay near 30 (measured: 30 at most over 4,600 modules of vllm, vllm-ascend and
#: vllm-omni), and every walk after the parse (ast and libcst visitors, ``ast.unparse``,
#: pyflakes, our own recursive functions) fits Python's default recursion limit up to about
#: 320 levels (measured: a chain ``a + a + ...`` in a runner, a patch and an upstream module
#: through extract, sync, verify and check). So a text this lets through is never too deep
#: to walk later, with a threefold margin.
#:
#: Not a higher recursion limit (in a thread with a big stack) instead: CPython's parser
#: accepts about three times the recursion limit, so every walk would still fall short of
#: what it accepts, and libcst's native parser, which reads the same text, crashes the
#: process outright (a segfault, near 5,000 levels on an 8 MB stack) on trees the parser
#: would then accept: no except clause catches that.
MAX_DEPTH = 100


class TooDeep(SyntaxError):
    """Valid Python nested more deeply than ``MAX_DEPTH`` (or than CPython's parser takes):
    a syntax error to every caller, which refuses it at its line as it refuses one."""


def parse(text: str, path: str) -> Tree:
    """Parse Python text into a statement tree.

    Raises BadInput (OP002) with the offending line echoed and a caret under it.
    """
    # libcst is imported on first parse: commands that parse nothing start fast.
    from omni_port.pyast import cstwalk

    module_ast = _parse_ast(text, path)
    return cstwalk.build(text, path, module_ast)


def _parse_ast(text: str, path: str) -> ast.Module:
    # The parser refuses a NUL byte without saying where it is (as a SyntaxError or a
    # ValueError, by Python version): point at it ourselves.
    nul = text.find("\0")
    if nul >= 0:
        line_start = text.rfind("\n", 0, nul) + 1
        line = text.count("\n", 0, nul) + 1
        raise syntax_error(path, text, line, nul - line_start + 1, "a NUL byte in the source")
    try:
        return parse_ast(text, path)
    except SyntaxError as exc:
        raise syntax_error(path, text, exc.lineno or 1, exc.offset or 1, exc.msg) from None


def parse_ast(text: str, path: str = "<unknown>") -> ast.Module:
    """``ast.parse`` of a whole text from outside (a runner, a patch's code, an upstream
    module), whose tree is walked afterwards: raises SyntaxError, TooDeep when it nests
    more than ``MAX_DEPTH`` levels; never RecursionError or MemoryError (how CPython's
    parser gives up on deep nesting, by version). Code cut from a tree this returned is no
    deeper, so it may be parsed with ``ast.parse`` as it is."""
    try:
        tree = ast.parse(text, filename=path)
    except (RecursionError, MemoryError):
        raise _gave_up(text, path) from None
    check_depth(tree, text, path)
    return tree


def module_or_none(text: str) -> ast.Module | None:
    """``parse_ast`` of a text whose trouble is someone else's to report (a module of a
    package read for names, a revision ranked as a base): None when it does not parse,
    nests too deeply or holds a NUL byte."""
    try:
        return parse_ast(text)
    except (SyntaxError, ValueError):
        return None


def check_depth(tree: ast.AST, text: str, path: str) -> None:
    """Raise TooDeep at the first node of ``tree`` (parsed from ``text``) nested more than
    ``MAX_DEPTH`` levels. Level by level, never recursively: the walk must not fail where
    the others would."""
    level: list[ast.AST] = [tree]
    depth = 1
    placed = tree  # the first node of the deepest level that has a line
    while level:
        placed = next((n for n in level if hasattr(n, "lineno")), placed)
        if depth > MAX_DEPTH:
            raise _too_deep(placed, depth + _levels_below(level), text, path)
        # Names, constants and operators hold nothing below them (half a tree's nodes).
        level = [c for n in level for c in ast.iter_child_nodes(n) if not isinstance(c, _LEAVES)]
        depth += 1


#: Nodes that are leaves: the level-by-level walk skips them, as they add no level below.
_LEAVES = (
    ast.Name,
    ast.Constant,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.alias,
    ast.Pass,
)


def _levels_below(level: list[ast.AST]) -> int:
    """How many levels lie below the nodes of ``level`` (the refusal names the depth)."""
    below = 0
    while level:
        level = [c for n in level for c in ast.iter_child_nodes(n) if not isinstance(c, _LEAVES)]
        below += 1 if level else 0
    return below


def _too_deep(node: ast.AST, depth: int, text: str, path: str) -> TooDeep:
    line = getattr(node, "lineno", 1)
    source = text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else ""
    # ast counts columns in UTF-8 bytes; the caret counts characters.
    offset = getattr(node, "col_offset", 0)
    col = len(source.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1
    message = f"too deeply nested to parse ({depth} levels; at most {MAX_DEPTH})"
    return TooDeep(message, (path, line, col, source))


def _gave_up(text: str, path: str) -> TooDeep:
    """TooDeep for a text CPython's parser gave up on, which says nowhere where: at the
    logical line that nests the most (``deepest_line``)."""
    line, col = deepest_line(text)
    source = text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else ""
    message = (
        f"too deeply nested to parse (more levels than Python's parser takes; at most {MAX_DEPTH})"
    )
    return TooDeep(message, (path, line, col, source))


#: Tokens each of which may open a level of an expression's tree where they repeat on one
#: line (``a + a + ...``, ``-(-a)``, ``a.b.c``, ``f()()``, ``x[0][0]``).
_NESTING_OPS = frozenset(
    {"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^", "~", ".", "(", "[", "{"}
)
#: Words that do the same (``not not a``, ``lambda: lambda: a``, ``a if b else c if ...``).
_NESTING_WORDS = frozenset({"not", "lambda", "if", "await"})


def deepest_line(text: str) -> tuple[int, int]:
    """Where the logical line holding the most tokens that may nest starts (line and column,
    1-based; (1, 1) when there is none). Their count bounds the line's depth from above, so
    when one line nests far deeper than a parser takes, it is that line. Flat runs (a list
    of numbers, ``a and b and c``) count nothing."""
    # Imported here: only a text the parser gave up on is tokenized.
    import io
    import tokenize

    best = (0, 1, 1)  # (count, line, column) of the line that nests the most so far
    count, start = 0, (0, 0)
    skipped = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                best = (count, *start) if count > best[0] else best
                count, start = 0, (0, 0)
            elif token.type not in skipped:
                start = start if start[0] else (token.start[0], token.start[1] + 1)
                nests = _NESTING_OPS if token.type == tokenize.OP else _NESTING_WORDS
                count += token.type in (tokenize.OP, tokenize.NAME) and token.string in nests
    except (tokenize.TokenError, SyntaxError):
        pass  # the line that nests the most before the text stops making sense
    return best[1], best[2]


def compile_findings(name: str, text: str) -> list[Finding]:
    """OP501 when ``text`` does not compile (the one compile check of sync and verify)."""
    return list(_compiled(name, text))


@memo.memoized
def _compiled(name: str, text: str) -> tuple[Finding, ...]:
    """``compile_findings``, kept for the run: a sync compiles each output as its imports
    settle and once written, a conflict's trial and verify the same texts again (34
    compiles of 20 texts in a GPU upgrade, each of a module of 3,000 lines)."""
    try:
        compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = f"does not compile: {exc.msg}"
        return (Finding(Code.OP501, name, exc.lineno or 1, message, exc.offset or 1),)
    except ValueError as exc:  # null bytes
        return (Finding(Code.OP501, name, 1, f"does not compile: {exc}"),)
    except (RecursionError, MemoryError):  # how the compiler gives up on deep nesting
        line, col = deepest_line(text)
        message = "does not compile: too deeply nested (more levels than Python's compiler takes)"
        return (Finding(Code.OP501, name, line, message, col),)
    return ()


def member_source(text: str, owner: str, name: str) -> str | None:
    """The code of one member of a module (``owner`` "" for a module-level one), decorators
    included, dedented; None when the module lacks it or does not parse. The last
    definition of the name wins, as at run time."""
    return member_sources(text, [(owner, name)])[(owner, name)]


def member_sources(
    text: str, wanted: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], str | None]:
    """``member_source`` of each (owner, name) of ``wanted``, the module parsed once for
    all of them (a release's module takes a twentieth of a second to parse, and a sync
    reads several members of each of a dozen releases)."""
    module = _module_ast(text)
    lines = text.split("\n")
    return {(owner, name): _member_code(module, lines, owner, name) for owner, name in wanted}


def _member_code(module: ast.Module | None, lines: list[str], owner: str, name: str) -> str | None:
    if module is None:
        return None
    body: list[ast.stmt] = module.body
    if owner:
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        body = cls.body if cls is not None else []
    node = None
    for candidate in body:
        if getattr(candidate, "name", None) == name:
            node = candidate
    if node is None or node.end_lineno is None:
        return None
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    return dedent_code("\n".join(lines[first - 1 : node.end_lineno])) + "\n"


@memo.memoized
def _module_ast(text: str) -> ast.Module | None:
    # Only where its members start and end is read, not walked (not ``parse_ast``): a
    # member too deep to walk is refused when it is parsed on its own.
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
