"""Conditions of reviewed V2 decisions: what must hold for an allow-list entry to be right.

An entry of the V2 allow-list says why omni's code may go without an NPU step; that reason
often holds only under a condition (omni's V2 runners refuse pipeline parallelism, so
vLLM never calls ``postprocess_num_computed_tokens``; omni's stages do not enable sparse
KV offload, so ``AscendModelState.remove_request`` has nothing more to free). An entry
names its conditions at the end of its reason, ``... [requires: no-sparse-kv-offload]``,
and each is checked where it can be decided: in omni's code by ``verify`` (OP333 when it
does not hold), or in a stage's configuration by the runtime switch when a worker builds
the V2 runner (``omni_port.v2.stage.Unsupported``). The generated tree keeps each in its
lock row (the row's ``reason``), where the switch reads it. Nothing here imports vLLM.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum

from omni_port.model import Rule


class Condition(StrEnum):
    """A condition an allow-list entry may require (``[requires: NAME]``)."""

    NO_PIPELINE_PARALLEL = "no-pipeline-parallel"
    """omni's V2 runners refuse ``pipeline_parallel_size > 1``: checked in the generated
    modules (a ``raise`` under a test of ``pipeline_parallel_size``)."""
    NO_SPARSE_KV_OFFLOAD = "no-sparse-kv-offload"
    """No V2 stage enables vllm-ascend's sparse KV offload
    (``additional_config.sparse_kv_offload_config.enabled``): checked by the runtime switch
    in each stage's configuration."""


#: The end of a reason that names its conditions.
_REQUIRES = re.compile(
    r"""
    \[requires:\s*            # the opening word
    (?P<names>[^\]]*)         # condition names, separated by commas
    \]\s*(?:\([^()]*\))?\s*$  # closed at the end (a row's reason adds the entry's place)
    """,
    re.VERBOSE,
)


def named(reason: str) -> tuple[str, ...]:
    """The condition names at the end of ``reason`` (as written; none when it names none)."""
    found = _REQUIRES.search(reason)
    if found is None:
        return ()
    return tuple(n.strip() for n in found["names"].split(",") if n.strip())


def unknown(reason: str) -> list[str]:
    """The names ``reason`` requires that are no Condition."""
    known = {c.value for c in Condition}
    return [n for n in named(reason) if n not in known]


def required(reasons: Iterable[str]) -> frozenset[Condition]:
    """Every known condition the reasons require."""
    known = {c.value: c for c in Condition}
    return frozenset(known[n] for r in reasons for n in named(r) if n in known)


def in_rows(rows: Iterable[Mapping[str, object]]) -> frozenset[Condition]:
    """The conditions the lock rows of a V2 tree require (the ``allowed`` rows' reasons)."""
    return required(str(row.get("reason", "")) for row in rows if Rule.ALLOWED in _rules(row))


def _rules(row: Mapping[str, object]) -> list[str]:
    rules = row.get("decided_by", [])
    return [str(r) for r in rules] if isinstance(rules, list) else []


# --- omni's code ---------------------------------------------------------------------------


def unmet(condition: Condition, modules: Mapping[str, ast.Module]) -> str:
    """Why ``condition`` does not hold in the generated modules ("" when it does, or when
    it is a stage's configuration, which only the runtime switch can see)."""
    if condition is Condition.NO_PIPELINE_PARALLEL and not any(
        refuses(tree, "pipeline_parallel_size") for tree in modules.values()
    ):
        return "no generated module refuses pipeline_parallel_size > 1 (a raise under a test of it)"
    return ""


def refuses(tree: ast.Module, name: str) -> bool:
    """Whether some ``if`` that reads ``name`` raises in its body."""
    return any(
        isinstance(node, ast.If)
        and any(_reads(inner, name) for inner in ast.walk(node.test))
        and any(isinstance(stmt, ast.Raise) for stmt in _shallow(node.body))
        for node in ast.walk(tree)
    )


def _reads(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == name
    return isinstance(node, ast.Constant) and node.value == name  # getattr(x, "name", 1)


def _shallow(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body``, nested blocks included, not nested functions."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for field in ("body", "orelse", "finalbody"):
                yield from _shallow(getattr(stmt, field, []))


# --- a stage's configuration -----------------------------------------------------------------


def broken(condition: Condition, vllm_config: object) -> str:
    """What in a stage's configuration breaks ``condition`` ("" when nothing does)."""
    if condition is Condition.NO_SPARSE_KV_OFFLOAD:
        additional = getattr(vllm_config, "additional_config", None)
        offload = additional.get("sparse_kv_offload_config") if isinstance(additional, dict) else 0
        if isinstance(offload, dict) and offload.get("enabled"):
            return "additional_config.sparse_kv_offload_config.enabled"
    return ""
