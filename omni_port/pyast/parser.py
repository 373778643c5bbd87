"""Parse Python text into a statement tree: the one entry point to both parsers.

libcst (structure and comments) loads on the first parse, so commands that parse nothing
start fast; the CPython parser gives positions and keys (see ``syntax``).
"""

from __future__ import annotations

import ast

from omni_port.model import Code, Finding
from omni_port.pyast import memo
from omni_port.pyast.syntax import Tree, dedent_code, syntax_error


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
        return ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise syntax_error(path, text, exc.lineno or 1, exc.offset or 1, exc.msg) from None


def compile_findings(name: str, text: str) -> list[Finding]:
    """OP501 when ``text`` does not compile (the one compile check of sync and verify)."""
    try:
        compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = f"does not compile: {exc.msg}"
        return [Finding(Code.OP501, name, exc.lineno or 1, message, exc.offset or 1)]
    except ValueError as exc:  # null bytes
        return [Finding(Code.OP501, name, 1, f"does not compile: {exc}")]
    return []


def member_source(text: str, owner: str, name: str) -> str | None:
    """The code of one member of a module (``owner`` "" for a module-level one), decorators
    included, dedented; None when the module lacks it or does not parse. The last
    definition of the name wins, as at run time."""
    module = _module_ast(text)
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
    lines = text.split("\n")[first - 1 : node.end_lineno]
    return dedent_code("\n".join(lines)) + "\n"


@memo.memoized
def _module_ast(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None
