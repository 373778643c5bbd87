"""Dropping imports by line edits gives libcst's text, and leaves the rest to libcst."""

from __future__ import annotations

import pytest

from omni_port.pyast import importcst, importedit

#: (code, names to drop, libcst's text) for cases the line edits take on.
LINE_EDITS = [
    pytest.param("import a\nimport b\n", {"a"}, "import b\n", id="whole-statement"),
    pytest.param("# c\nimport a\nimport b\n", {"a"}, "# c\nimport b\n", id="header-stays"),
    pytest.param(
        "x = 1\n\n# c\n\nimport a  # t\nimport b\n",
        {"a"},
        "x = 1\nimport b\n",
        id="comment-above-goes",
    ),
    pytest.param("x = 1\n  \n  # c\nimport a\n", {"a"}, "x = 1\n", id="indented-comment-above"),
    pytest.param("x = 1\nimport a\n# tail\n\n", {"a"}, "x = 1\n# tail\n\n", id="footer-stays"),
    pytest.param(
        "# h\nimport a\n\n# c\nimport b\nx = 1\n",
        {"a", "b"},
        "# h\nx = 1\n",
        id="two-statements",
    ),
    pytest.param("if x:\n    y = 1\n\n\nimport a\n", {"a"}, "if x:\n    y = 1\n", id="after-if"),
    pytest.param("import a, b as c,  d\n", {"c"}, "import a, d\n", id="middle-alias"),
    pytest.param("import a , b\n", {"a"}, "import b\n", id="first-alias"),
    pytest.param("import a ,b\n", {"b"}, "import a\n", id="last-alias"),
    pytest.param("from m import a ,  b # z\n", {"b"}, "from m import a # z\n", id="from-comment"),
    pytest.param("import os.path, sys\n", {"os"}, "import sys\n", id="dotted-root"),
    pytest.param("from . import a, b;\n", {"a"}, "from . import b;\n", id="relative-semicolon"),
    pytest.param("import a;\nx = 1\n", {"a"}, "x = 1\n", id="whole-with-semicolon"),
    pytest.param("from m import *\nimport a\n", {"*", "a"}, "from m import *\n", id="star-stays"),
    pytest.param(
        "def f():\n    import a\nimport a\nimport b\n",
        {"a"},
        "def f():\n    import a\nimport b\n",
        id="function-body-untouched",
    ),
    pytest.param("x = 'é'; y = 1\nimport a, é\n", {"a"}, "x = 'é'; y = 1\nimport é\n", id="utf8"),
]

#: Cases the line edits leave to libcst (its own rules for comments and footers apply).
TO_LIBCST = [
    pytest.param("if x:\n    import a\n    import b\n", {"a"}, id="nested"),
    pytest.param("from m import (\n    a,\n    b,\n)\n", {"b"}, id="parenthesized"),
    pytest.param("from m import (a, b)\n", {"a"}, id="parenthesized-one-line"),
    pytest.param("x = 1; import a\n", {"a"}, id="shares-a-line"),
    pytest.param("import a\n", {"a"}, id="module-left-empty"),
    pytest.param("import a", {"a"}, id="no-final-newline"),
    pytest.param("x = 1\r\nimport a\r\n", {"a"}, id="crlf"),
    pytest.param("if x:\n    y = 1\n    # in\n\n# out\nimport a\n", {"a"}, id="block-footer"),
    pytest.param("import a \\\n    , b\n", {"b"}, id="continuation"),
]


@pytest.mark.parametrize(("code", "names", "expected"), LINE_EDITS)
def test_line_edits_give_libcsts_text(code: str, names: set[str], expected: str) -> None:
    assert importcst.drop_names(code, names) == expected
    assert importedit._line_edits(code, names) == expected
    assert importedit.drop_names(code, names) == expected


@pytest.mark.parametrize(("code", "names"), TO_LIBCST)
def test_other_cases_go_to_libcst(code: str, names: set[str]) -> None:
    assert importedit._line_edits(code, names) is None
    assert importedit.drop_names(code, names) == importcst.drop_names(code, names)
