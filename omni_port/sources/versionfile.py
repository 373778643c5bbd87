"""The version a package tree states in its ``_version.py``, read as text, never imported.

vLLM-Omni and vllm-ascend checkouts carry the file setuptools-scm writes at build time
(``__version__ = version = '0.26.0rc1'``, annotated ``__version__: str = ...`` in newer
releases); a hand-written one assigns ``__version__`` alone. Every reader of a tree's
version goes through here, so every form is read the same way everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

#: The file a package's version is written to, inside the package folder.
VERSION_FILE = "_version.py"

_VERSION = re.compile(
    r"""
    __version__ \s* (?: : \s* str \s* )?   # the name, maybe annotated
    = \s* (?: version \s* = \s* )?         # setuptools-scm writes `__version__ = version =`
    ['"] ([^'"]+) ['"]                     # the version string
    """,
    re.VERBOSE,
)


def stated_version(text: str) -> str:
    """The ``__version__`` that the text of a ``_version.py`` assigns, or "" when it
    assigns none."""
    found = _VERSION.search(text)
    return found.group(1) if found else ""


def version_file(root: Path, package: str) -> Path:
    """Where the tree at ``root`` keeps ``package``'s version (it may not exist)."""
    return root / package / VERSION_FILE


def tree_version(root: Path, package: str) -> str:
    """``__version__`` of ``package`` in the tree at ``root``, or "" when the tree has no
    ``_version.py`` for it or the file assigns none. Bytes that are not UTF-8 are replaced,
    not an error: only the version string matters."""
    path = version_file(root, package)
    if not path.is_file():
        return ""
    return stated_version(path.read_text(encoding="utf-8", errors="replace"))
