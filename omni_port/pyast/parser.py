"""Parse Python text into a statement tree: the one entry point to both parsers.

libcst (structure and comments) loads on the first parse, so commands that parse nothing
start fast; the CPython parser gives positions and keys (see ``syntax``).
"""

from __future__ import annotations

import ast

from omni_port.model import Code, Finding
from omni_port.pyast.syntax import Tree, syntax_error


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
