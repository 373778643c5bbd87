"""Answers kept for one run: pure functions asked the same question again within a sync
keep their answers until the run ends, never longer.

A run is what ``run()`` opens (the API opens one per sync, verification and check).
Outside a run nothing is kept: every call computes its answer, which is the same answer,
only slower. So no answer outlives the inputs it was computed from, and two runs in one
process (a test suite, a benchmark) never see each other's.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The tables of the run in progress, by name; None outside a run.
_TABLES: ContextVar[dict[str, dict[Hashable, object]] | None] = ContextVar(
    "omni_port_memo", default=None
)


@contextlib.contextmanager
def run() -> Iterator[None]:
    """Keep answers until the block ends. A run inside a run is part of the outer one."""
    if _TABLES.get() is not None:
        yield
        return
    token = _TABLES.set({})
    try:
        yield
    finally:
        _TABLES.reset(token)


def table(name: str) -> dict[Hashable, object] | None:
    """The run's table called ``name`` (made empty the first time), for answers keyed by
    something other than the arguments; None outside a run."""
    tables = _TABLES.get()
    if tables is None:
        return None
    return tables.setdefault(name, {})


def memoized(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` with its answers kept for the run, by its (hashable) arguments."""
    name = f"{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def kept(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        answers = table(name)
        if answers is None:
            return function(*args, **kwargs)
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            return answers[key]  # type: ignore[return-value]
        except KeyError:
            answer = answers[key] = function(*args, **kwargs)
            return answer

    return kept
