"""What a V2 tree was generated from, pinned file by file, and whether the installed packages
still hold it.

A composed V2 runner holds more assumptions than the NPU runner file: what vllm-ascend's
patch modules install (its rewrites call it), the substitutes its classes are rebased onto,
the vLLM-Omni modules it imports (served by the installed vLLM-Omni, not by the tree) and
vLLM's modules its composition was read against. The lock pins each as a source row
(role ``pinned``, label ``dist:member path``, the sha256 of its text) and the releases by
their labels (``vllm-omni==0.30.0``); the runtime switch compares them with what is
installed (found, never imported) and names what differs.

Digests are of the text as UTF-8 (``errors="replace"``), so a file read from an archive and
the same file installed agree.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from omni_port.pyast.parser import module_or_none

#: The lock role of a pinned file.
ROLE = "pinned"
#: The distribution each top-level package is installed by.
DISTRIBUTIONS: Mapping[str, str] = {
    "vllm": "vllm",
    "vllm_ascend": "vllm-ascend",
    "vllm_omni": "vllm-omni",
}


@dataclass(frozen=True, slots=True)
class Pin:
    """One file a generated tree relies on, as it was read."""

    #: ``vllm_ascend/patch/worker/patch_v2/patch_model_state.py``.
    member: str
    sha256: str

    @property
    def label(self) -> str:
        """``vllm-ascend:vllm_ascend/...``: the distribution, then the member path."""
        return f"{distribution(self.member)}:{self.member}"


def distribution(member: str) -> str:
    top = member.split("/", 1)[0]
    return DISTRIBUTIONS.get(top, top)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pins(texts: Mapping[str, str]) -> list[Pin]:
    """A pin per file (member path -> text), in path order."""
    return [Pin(member, digest(text)) for member, text in sorted(texts.items())]


def imported_omni(
    modules: Mapping[str, str], omni_texts: Mapping[str, str], generated: Iterable[str]
) -> dict[str, str]:
    """omni's modules the generated ``modules`` import (lazily too) and the tree does not
    generate (``generated`` are their member paths): the installed vLLM-Omni serves them."""
    served = set(generated)
    found: dict[str, str] = {}
    for text in modules.values():
        for module in _imported(text):
            if not module.startswith("vllm_omni."):
                continue
            path = _member(module, omni_texts)
            if path and path not in served:
                found[path] = omni_texts[path]
    return found


def _imported(text: str) -> Iterator[str]:
    tree = module_or_none(text)
    if tree is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def _member(dotted: str, texts: Mapping[str, str]) -> str:
    base = dotted.replace(".", "/")
    for path in (f"{base}.py", f"{base}/__init__.py"):
        if path in texts:
            return path
    return ""


# --- against what is installed --------------------------------------------------------------


def installed_root(package: str) -> Path | None:
    """The directory the installed ``package`` lives in (its parent), found, never imported."""
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    locations = list(found.submodule_search_locations or []) if found else []
    return Path(locations[0]).parent if locations else None


def installed_digest(root: Path, member: str) -> str:
    """The digest of an installed file ("" when it is not there)."""
    try:
        data = (root / member).read_bytes()
    except OSError:
        return ""
    return digest(data.decode("utf-8", "replace"))


def differences(rows: Iterable[tuple[str, str]], releases: Iterable[str]) -> list[str]:
    """Why the installed packages are not what a tree was generated from: ``rows`` are the
    (label, sha256) of its pinned files, ``releases`` the labels of its inputs
    (``vllm-omni==0.30.0``; a path or a checkout pins files only). One reason per
    distribution, naming its files that differ."""
    reasons = [reason for label in releases if (reason := _release(label))]
    by_dist: dict[str, list[tuple[str, str]]] = {}
    for label, sha in rows:
        dist, _, member = label.partition(":")
        by_dist.setdefault(dist, []).append((member, sha))
    for dist, files in sorted(by_dist.items()):
        reason = _files(dist, files)
        if reason:
            reasons.append(reason)
    return reasons


def _release(label: str) -> str:
    dist, sep, version = label.partition("==")
    if not sep or dist not in DISTRIBUTIONS.values():
        return ""
    try:
        installed = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return f"{dist} is not installed here; the runners were generated from {label}"
    if installed == version:
        return ""
    return f"the installed {dist} is {installed}, the runners were generated from {label}"


def _files(dist: str, files: list[tuple[str, str]]) -> str:
    package = next((p for p, d in DISTRIBUTIONS.items() if d == dist), dist.replace("-", "_"))
    root = installed_root(package)
    if root is None:
        return f"{dist} is not installed here; the runners rely on {len(files)} of its files"
    differ = sorted(member for member, sha in files if installed_digest(root, member) != sha)
    if not differ:
        return ""
    shown = ", ".join(differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
    return (
        f"the installed {dist} ({root}) differs from what the runners were generated from "
        f"in {len(differ)} of the {len(files)} files they rely on: {shown}; sync onto "
        "`installed` or install that release"
    )
