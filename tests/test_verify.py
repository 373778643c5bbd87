"""verify: every check catches its seeded breakage at the right line and stays quiet on sound code.

Inline cases mark what they expect on the line itself: ``!OP507`` on a line means one finding
with that code there (a ``# >>> block`` ... ``# <<<`` pair of lines fences a placed block).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from omni_port import api
from omni_port.model import (
    CONFLICT_CLOSE,
    CONFLICT_LINE,
    CONFLICT_OPEN,
    RESOLVE_FIRST,
    Anchor,
    Block,
    BlockKind,
    Code,
    Finding,
    Origin,
    PatchSet,
    Placement,
    Rule,
    Severity,
    Status,
)
from omni_port.sources.textio import decode, read_source
from omni_port.sync.pipeline import SyncResult
from omni_port.verify import checks
from omni_port.verify.conflicts import conflict_findings
from omni_port.verify.kept import with_keepers
from omni_port.verify.rows import row_findings
from tests.conftest import conflict_region
from tests.golden import DATA

GEN = "gen.py"
RUNNERS = ("npu_model_runner.py", "npu_ar_model_runner.py", "npu_generation_model_runner.py")
UPSTREAM_MODULE = "fakeacc.runner_v1"
PACKAGES = DATA / "verify" / "packages"
PLAIN = checks.Context()


def _dedent(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def _expected(*texts: tuple[str, str]) -> list[tuple[str, str, int]]:
    """(path, code, line) of every ``!OPnnn`` mark in the given (path, text) pairs."""
    return sorted(
        (path, code, number)
        for path, text in texts
        for number, line in enumerate(text.splitlines(), start=1)
        for code in re.findall(r"!(OP\d{3})", line)
    )


def _found(findings: Sequence[Finding], codes: Sequence[str] = ()) -> list[tuple[str, str, int]]:
    return sorted(
        (f.path, f.code.value, f.line) for f in findings if not codes or f.code.value in codes
    )


def _blocks(text: str, owner: str = "Runner", path: str = GEN) -> list[Placement]:
    """A placed block for every ``# >>> block`` ... ``# <<<`` region (marker lines included)."""
    placements: list[Placement] = []
    start = 0
    member = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if match := re.match(r"\s+def (\w+)", line):
            member = match[1]
        if "# >>> block" in line:
            start = number
        elif "# <<<" in line:
            ident = f"gen.{owner}.{member}.block-{len(placements) + 1:02d}"
            placements.append(
                Placement(
                    ident, path, owner, member, "insertion", True, Status.PLACED, 1.0, start, number
                )
            )
    return placements


def _verify(
    text: str,
    context: checks.Context = PLAIN,
    overrides: Sequence[checks.Override] = (),
) -> list[Finding]:
    return checks.verify({GEN: text}, _blocks(text), overrides, context)


# --- 1 and 2: compile and pyflakes ----------------------------------------------------------

NAME_CASES = [
    pytest.param(
        """
        def run(:  # !OP501
            return 1
        """,
        id="syntax-error",
    ),
    pytest.param(
        """
        def run():
            return missing_helper()  # !OP502
        """,
        id="undefined-name",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self):
                return 1

            def execute_model(self):  # !OP503
                return 2
        """,
        id="duplicate-definition",
    ),
    pytest.param(
        """
        import os  # !OP504
        import sys

        print(sys.argv)
        """,
        id="unused-import-from-splicing",
    ),
]


@pytest.mark.parametrize("code", NAME_CASES)
def test_compile_and_name_checks(code: str) -> None:
    text = _dedent(code)
    assert _found(_verify(text)) == _expected((GEN, text))


def test_an_import_the_source_left_unused_is_allowed() -> None:
    text = "import os\nimport json  # !OP504\n"
    context = checks.Context(unused_in_source={GEN: ("os",)})
    assert _found(_verify(text, context)) == _expected((GEN, text))


def test_a_module_that_does_not_compile_is_not_checked_further() -> None:
    text = "import os\nprint(missing)\nx = (\n"
    findings = _verify(text)
    assert [(f.code.value, f.line) for f in findings] == [("OP501", 3)]


@pytest.mark.parametrize(
    "terms",
    [
        pytest.param(400, id="compiles-but-too-deep-to-check"),
        pytest.param(100_000, id="too-deep-to-compile"),
    ],
)
def test_a_module_too_deep_to_check_is_one_finding_at_its_line(terms: int) -> None:
    """A hand-edited runner nesting past what the checks walk (a chain ``a + a + ...``)."""
    text = f"import os\n\n\ndef run(a):\n    return {' + '.join(['a'] * terms)}\n"
    findings = _verify(text)
    assert [(f.code.value, f.line) for f in findings] == [("OP501", 5)]


# --- 4. block binding -----------------------------------------------------------------------

BINDING_CASES = [
    pytest.param(
        """
        def make(ids):
            return ids


        class Runner:
            def sample_tokens(self, batch):
                request_ids = list(batch)
                # >>> block  !OP507
                output = make(req_ids)
                # <<<
                return output, request_ids
        """,
        id="renamed-local",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                # >>> block  !OP507
                total = count + 1
                # <<<
                count = len(batch)
                return total, count
        """,
        id="bound-only-after-the-block",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                if batch:
                    logits = batch[0]
                # >>> block  !OP507
                print(logits)
                # <<<
        """,
        id="bound-in-one-branch",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                if batch:
                    logits = batch[0]
                elif self:
                    logits = batch
                else:
                    logits = None
                # >>> block
                print(logits)
                # <<<
        """,
        id="ok-bound-in-every-branch",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                if not batch:
                    return None
                else:
                    logits = batch[0]
                if logits is None:
                    raise ValueError
                # >>> block
                print(logits)
                # <<<
        """,
        id="ok-other-branch-leaves",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                logits = batch[0]
                with open(batch) as handle, open(logits):
                    # >>> block
                    print(logits, handle)
                    # <<<
        """,
        id="ok-bound-before-with-and-by-with",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                with open(batch):
                    hidden = batch[0]
                # >>> block
                print(hidden)
                # <<<
        """,
        id="ok-bound-in-with-body",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch, /, step, *extra, scale=1.0, **kwargs):
                # >>> block
                print(self, batch, step, extra, scale, kwargs)
                # <<<
        """,
        id="ok-parameters",
    ),
    pytest.param(
        """
        import logging

        LIMIT = 4
        logger = logging.getLogger(__name__)


        def helper():
            return LIMIT


        class Runner:
            def execute_model(self, batch):
                # >>> block
                logger.debug("%s %s %s", len(batch), helper(), Runner)
                # <<<
        """,
        id="ok-globals-imports-builtins",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                # >>> block
                pooled = [item for item in batch]
                print(pooled)
                # <<<
                item = 0
                return item
        """,
        id="ok-bound-in-the-block-itself",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                for item in batch:
                    last = item
                    # >>> block
                    print(item, last)
                    # <<<
                # >>> block  !OP507
                print(last)
                # <<<
        """,
        id="loop-target-inside-not-after",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                while batch:
                    hidden = batch.pop()
                else:
                    done = True
                for item in batch:
                    if item:
                        break
                else:
                    found = False
                # >>> block  !OP507 !OP507
                print(hidden, done, found)
                # <<<
        """,
        id="loop-body-does-not-bind-else-does-unless-break",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                try:
                    logits = batch.compute()
                except TypeError:
                    pass
                # >>> block  !OP507
                print(logits)
                # <<<
        """,
        id="try-body-only",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                try:
                    logits = batch.compute()
                except TypeError:
                    logits = None
                except ValueError:
                    raise
                # >>> block
                print(logits)
                # <<<
        """,
        id="ok-try-and-every-handler-bind",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                try:
                    batch.compute()
                except TypeError as error:
                    # >>> block
                    print(error)
                    # <<<
                # >>> block  !OP507
                print(error)
                # <<<
        """,
        id="except-name-inside-handler-only",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                try:
                    batch.compute()
                finally:
                    closed = True
                # >>> block
                print(closed)
                # <<<
        """,
        id="ok-finally-binds",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                def inner():
                    hidden = batch[0]
                    return hidden

                # >>> block  !OP507
                print(hidden, inner)
                # <<<
        """,
        id="nested-function-is-its-own-scope",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                ids = [rid for rid in batch]
                # >>> block  !OP507
                print(rid, ids)
                # <<<
        """,
        id="comprehension-variable-does-not-leak",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                if (size := len(batch)) > 1:
                    # >>> block
                    print(size)
                    # <<<
                if batch or (extra := 1):
                    # >>> block  !OP507
                    print(extra)
                    # <<<
        """,
        id="walrus-only-where-certainly-evaluated",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                hidden = batch[0]
                del hidden
                # >>> block  !OP507
                print(hidden)
                # <<<
        """,
        id="deleted",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                if batch:
                    total = 0
                # >>> block  !OP507
                total += 1
                # <<<
        """,
        id="augmented-assignment-reads",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                # >>> block
                later_read = lambda: hidden  # noqa: E731
                # <<<
                hidden = batch
                return later_read
        """,
        id="ok-lambda-body-runs-later",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                match batch:
                    case [first, *rest]:
                        kind = first
                    case {"kind": kind, **rest}:
                        pass
                    case _:
                        return None
                # >>> block
                print(kind, rest)
                # <<<
        """,
        id="ok-match-binds-in-every-case",
    ),
    pytest.param(
        """
        class Runner:
            def execute_model(self, batch):
                if batch:
                    value = 1
                print(value)
                # >>> block
                print(batch)
                # <<<
        """,
        id="ok-upstream-code-outside-blocks-is-not-judged",
    ),
]


@pytest.mark.parametrize("code", BINDING_CASES)
def test_block_binding(code: str) -> None:
    text = _dedent(code)
    assert _found(_verify(text)) == _expected((GEN, text))


def test_only_placed_blocks_are_checked_for_binding() -> None:
    text = _dedent(
        """
        class Runner:
            def execute_model(self, batch):
                # >>> block
                print(later)
                # <<<
                later = batch
        """
    )
    placed = _blocks(text)[0]
    found = {}
    for status in (Status.PLACED, Status.CONFLICT, Status.CARRIED):
        findings = checks.verify({GEN: text}, [replace(placed, status=status)], [], PLAIN)
        found[status] = _found(findings, ("OP507",))
    assert found == {Status.PLACED: [(GEN, "OP507", 3)], Status.CONFLICT: [], Status.CARRIED: []}


def _bound_in_a_conflict(code: str, before: str = "") -> str:
    """A method whose placed block reads `scale`, behind a conflict region of ``code``
    (``gen.Runner.step.edit-01``, commented out as sync leaves it), after ``before``."""
    region = [f"{CONFLICT_OPEN} gen.Runner.step.edit-01 (Implicit edit)", "# ambiguous."]
    region += [f"{CONFLICT_LINE}{line}" for line in code.split("\n")] + [CONFLICT_CLOSE]
    lines = [*before.split("\n")] * bool(before) + region
    return (
        "class Runner:\n    def step(self, batch):\n"
        + "".join(f"        {line}\n" for line in lines)
        + "        self.prepare(batch)\n"
        + "        # >>> block\n        print(batch, scale)\n        # <<<\n"
        + "        return batch\n"
    )


def _behind(text: str) -> list[Finding]:
    """verify's findings of ``_bound_in_a_conflict``'s text, its block placed."""
    start = text.split("\n").index("        # >>> block") + 1
    block = Placement(
        "gen.Runner.step.block-01", GEN, "Runner", "step", "insertion", True, Status.PLACED, 1.0
    )
    return checks.verify({GEN: text}, [replace(block, start=start, end=start + 2)], [], PLAIN)


def _op507(text: str) -> list[tuple[int, str, bool]]:
    """(line, message, whether a conflict owns it) of each OP507 of ``_behind(text)``."""
    return [(f.line, f.message, f.behind_conflict) for f in _behind(text) if f.code is Code.OP507]


#: What the conflict of ``_bound_in_a_conflict`` says when it owns the read.
OWNED = (
    "block gen.Runner.step.block-01 reads `scale`, which the conflict gen.Runner.step.edit-01 "
    f"(line {{line}}) binds in its commented-out code: {RESOLVE_FIRST}"
)


def test_a_read_only_a_conflict_binds_is_one_finding_naming_the_conflict() -> None:
    """issue 46 (vllm 0.34.0's gpu-v2 upgrade): a placed edit reads a name only a conflict's
    commented-out code binds. One OP507 per read of the block, at the read, naming the
    conflict, not also pyflakes' undefined name (OP502)."""
    text = _bound_in_a_conflict("# why\nscale = batch.scale")
    errors = [f for f in _behind(text) if f.severity is Severity.ERROR]
    assert [(f.code.value, f.line, f.col) for f in errors] == [("OP507", 10, 22)]
    assert errors[0].message == OWNED.format(line=3)


def test_a_read_a_conflict_binds_on_the_path_the_output_does_not_is_the_conflicts() -> None:
    """make sync's generation `sample_tokens`: the output binds `output` only in a branch
    that returns, the conflict `block-01` on the path to the reads of `edit-14`/`edit-15`.
    Restored where it stands, the conflict's code binds the name on every path: its read."""
    before = "if not batch:\n    scale = 0\n    return scale"
    text = _bound_in_a_conflict("scale = batch.scale", before)
    assert _op507(text) == [(12, OWNED.format(line=6), True)]


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("# why\nscale_factor = batch.scale", id="binds-another-name"),
        pytest.param("def helper():\n    scale = 1", id="binds-it-in-a-function"),
        pytest.param("if batch:\n    scale = 1", id="binds-it-on-one-path"),
        pytest.param("else:\n    scale = 1", id="does-not-parse-where-it-stands"),
    ],
)
def test_a_read_a_conflict_does_not_own_is_the_blocks_own(code: str) -> None:
    """What the conflict was resolved to (or dropped as) does not bind the name on every path
    to the read: the read is the block's own OP507 (one per name, at the block), and the gate
    still fails; the same module whose conflict binds the name has the conflict's."""
    unbound = "block gen.Runner.step.block-01 reads `scale`, which is not bound on every path"
    assert _op507(_bound_in_a_conflict(code)) == [(9, f"{unbound} before it", False)]
    assert _op507(_bound_in_a_conflict("# why\nscale = batch.scale"))[0][::2] == (10, True)


def test_crlf_modules_report_the_same_lines() -> None:
    text = _dedent(
        """
        class Runner:
            def execute_model(self, batch):
                if batch:
                    logits = batch[0]
                # >>> block  !OP507
                print(logits)
                # <<<
        """
    )
    crlf = text.replace("\n", "\r\n")
    findings = checks.verify({GEN: crlf}, _blocks(text), [], PLAIN)
    assert _found(findings) == _expected((GEN, text))


def test_a_hazard_the_upstream_method_shares_is_a_note() -> None:
    upstream = """
        class NPUModelRunner:
            def execute_model(self, batch):
                if batch:
                    logits = batch[0]
                return logits
        """
    text = _dedent(
        """
        class Runner:
            def execute_model(self, batch):
                if batch:
                    logits = batch[0]
                # >>> block  !OP507
                print(logits)
                # <<<
                return logits
        """
    )
    context = checks.Context(
        upstream=api.parse_upstream(_dedent(upstream), "u.py", UPSTREAM_MODULE)
    )
    findings = _verify(text, context, _copies(text, "Runner", "NPUModelRunner"))
    assert _found(findings) == _expected((GEN, text))
    assert findings[0].severity is Severity.NOTE


# --- 3. imports -----------------------------------------------------------------------------

FAKEACC = {
    "fakeacc": '"""Synthetic package."""\n',
    "fakeacc.sampling": "def apply_grammar_bitmask(logits):\n    return logits\n",
    "fakeacc.everything": "from fakeacc.sampling import *\n",
    "fakeacc.lazy": "def __getattr__(name):\n    return name\n",
    "fakeacc.reexport": "from fakeacc.sampling import apply_grammar_bitmask as bitmask\n",
    "fakeacc.listed": "__all__ = ['dynamic']\nglobals()['dynamic'] = 1\n",
    "fakeacc.ns.deep": "VALUE = 1\n",
    "fakeacc.compat": (
        "try:\n    from fast import Runner\nexcept ImportError:\n    class Runner:\n        pass\n"
    ),
    "vllm.v1.worker.gpu_model_runner": "class GPUModelRunner:\n    pass\n",
}
IMPORT_CONTEXT = checks.Context(
    package="fakeacc.gen",
    sources=checks.PackageSources(FAKEACC, frozenset({"fakeacc"})),
    checked_packages=frozenset({"fakeacc", "vllm"}),
)
IMPORT_CODES = ("OP505", "OP506")

IMPORT_CASES = [
    pytest.param("from fakeacc.sampling import apply_bitmask  # !OP505\n", id="moved-name"),
    pytest.param("import fakeacc.gone  # !OP505\n", id="missing-module"),
    pytest.param("from fakeacc.gone.deeper import x  # !OP505\n", id="missing-module-from"),
    pytest.param(
        """
        def load():
            from fakeacc.sampling import nope  # !OP505

            return nope
        """,
        id="nested-import",
    ),
    pytest.param(
        """
        from .. import sampling
        from ..sampling import apply_grammar_bitmask
        from ..sampling import nope  # !OP505
        from ..... import too_far  # !OP505
        """,
        id="relative-imports",
    ),
    pytest.param(
        """
        import fakeacc.ns.deep
        from fakeacc import sampling
        from fakeacc.compat import Runner
        from fakeacc.everything import anything
        from fakeacc.lazy import anything_else
        from fakeacc.listed import dynamic
        from fakeacc.ns import deep
        from fakeacc.reexport import bitmask
        """,
        id="ok-definitions-reexports-submodules-star-getattr-all",
    ),
    pytest.param(
        """
        try:
            from fakeacc.sampling import nope
        except ImportError:
            nope = None
        """,
        id="ok-guarded-by-import-error",
    ),
    pytest.param(
        """
        import os
        import torch
        from numpy import array
        """,
        id="ok-packages-out-of-scope",
    ),
    pytest.param(
        """
        from vllm.config import VllmConfig  # !OP506
        import vllm.utils
        from vllm.v1 import worker
        """,
        id="one-note-per-unavailable-package",
    ),
    pytest.param(
        """
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner
        from vllm.v1.worker.gpu_model_runner import InputBatch  # !OP505
        """,
        id="single-module-of-an-uncovered-package",
    ),
]


@pytest.mark.parametrize("code", IMPORT_CASES)
def test_import_resolution(code: str) -> None:
    text = _dedent(code)
    found = _found(_verify(text, IMPORT_CONTEXT), IMPORT_CODES)
    assert found == _expected((GEN, text))


def test_an_unavailable_package_is_one_note_across_modules() -> None:
    modules = {"a.py": "import vllm.config\n", "b.py": "from vllm import envs\nimport vllm\n"}
    findings = checks.verify(modules, [], [], IMPORT_CONTEXT)
    notes = [f for f in findings if f.code.value == "OP506"]
    assert _found(notes) == [("a.py", "OP506", 1)]
    assert notes[0].severity is Severity.NOTE
    assert "3 imports" in notes[0].message


def test_the_unavailable_note_says_why() -> None:
    why = "vllm==9.9.1 (paired with vllm-ascend==9.9.1rc1) could not be fetched: offline"
    context = replace(IMPORT_CONTEXT, unavailable={"vllm": why})
    findings = checks.verify({"a.py": "import vllm.config\n"}, [], [], context)
    assert [f.message for f in findings if f.code.value == "OP506"] == [
        f"unverified: source of vllm not available: {why} (1 imports not checked)"
    ]


# --- 5. overrides and attributes ------------------------------------------------------------

UPSTREAM = """
from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class Base:
    def shared(self, batch):
        self.shared_state = batch


class NPUModelRunner(Base):
    max_batch: int

    def __init__(self, config):
        self.config = config
        self.kv_caches: list = []

    @property
    def device(self):
        return "npu"

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        return None

    def sample_tokens(self, grammar_output):
        return None

    def _dummy_run(self, num_tokens, *, is_profile=False):
        return None


class OpaqueRunner(GPUModelRunner):
    def execute_model(self, scheduler_output):
        return None
"""


def _override_context(upstream: str) -> checks.Context:
    return checks.Context(
        upstream=api.parse_upstream(_dedent(upstream), "u.py", UPSTREAM_MODULE),
        sources=checks.PackageSources({}, frozenset({"fakeacc"})),
    )


def _copies(text: str, owner: str, upstream_owner: str) -> list[checks.Override]:
    """Every method of ``owner`` as a copy of the same-named upstream method."""
    names = re.findall(r"^    (?:async )?def (\w+)", text, re.MULTILINE)
    return [checks.Override(GEN, owner, name, upstream_owner, name) for name in names]


OVERRIDE_CASES = [
    pytest.param(
        UPSTREAM.replace("(self, grammar_output)", "(self, grammar_output, scheduler_output)"),
        """
        class Runner:
            def sample_tokens(self, grammar_output):  # !OP508
                return None
        """,
        id="upstream-gained-a-positional-parameter",
    ),
    pytest.param(
        UPSTREAM,
        """
        class Runner:
            def _dummy_run(self, num_tokens):  # !OP508
                return None
        """,
        id="override-lacks-a-keyword",
    ),
    pytest.param(
        UPSTREAM,
        """
        class Runner:
            def execute_model(self, sched, intermediate_tensors=None):  # !OP508
                return None

            def sample_tokens(self, grammar_output, extra):  # !OP508
                return None
        """,
        id="renamed-or-extra-required-positional",
    ),
    pytest.param(
        UPSTREAM,
        """
        class Runner:
            def profile_run(self):  # !OP508
                return None
        """,
        id="upstream-method-vanished",
    ),
    pytest.param(
        UPSTREAM,
        """
        class Runner:
            def execute_model(self, scheduler_output, intermediate_tensors=None, extra=None):
                return None

            def _dummy_run(self, *args, **kwargs):
                return None

            def shared(self, batch):
                return None

            def device(self):
                return None
        """,
        id="ok-compatible-inherited-and-property",
    ),
]


@pytest.mark.parametrize(("upstream", "code"), OVERRIDE_CASES)
def test_overrides(upstream: str, code: str) -> None:
    text = _dedent(code)
    context = _override_context(upstream)
    findings = _verify(text, context, _copies(text, "Runner", "NPUModelRunner"))
    assert _found(findings) == _expected((GEN, text))


def test_a_method_missing_beside_an_unreadable_base_is_a_note() -> None:
    text = _dedent(
        """
        class Runner:
            def execute_model(self, scheduler_output):
                return None

            def compile_or_warm_up(self):  # !OP506
                return None
        """
    )
    findings = _verify(text, _override_context(UPSTREAM), _copies(text, "Runner", "OpaqueRunner"))
    assert _found(findings) == _expected((GEN, text))
    assert {f.severity for f in findings} == {Severity.NOTE}


ATTRIBUTE_RUNNER = """
from fakeacc.runner_v1 import NPUModelRunner


class Runner(NPUModelRunner):
    def __init__(self, config):
        super().__init__(config)
        self.talker = None

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        # >>> block
        print(self.config, self.device, self.shared, self.shared_state, self.max_batch)
        print(self.talker, self.omni_state)
        print(self.kv_caches)  {mark}
        # <<<
        self.omni_state = 1
"""

ATTRIBUTE_CASES = [
    pytest.param(UPSTREAM, "", id="ok-assigned-defined-inherited-or-omni"),
    pytest.param(
        UPSTREAM.replace("self.kv_caches: list = []", "self.kv_cache_list = []"),
        "# !OP509",
        id="upstream-attribute-removed",
    ),
    pytest.param(
        UPSTREAM.replace("self.kv_caches: list = []", "pass").replace(
            "class NPUModelRunner(Base)", "class NPUModelRunner(Base, GPUModelRunner)"
        ),
        "# !OP506",
        id="unreadable-base-makes-it-a-note",
    ),
]


@pytest.mark.parametrize(("upstream", "mark"), ATTRIBUTE_CASES)
def test_self_attributes_read_by_blocks(upstream: str, mark: str) -> None:
    text = _dedent(ATTRIBUTE_RUNNER.replace("{mark}", mark))
    context = _override_context(upstream)
    overrides = [checks.Override(GEN, "Runner", "execute_model", "NPUModelRunner", "execute_model")]
    findings = _verify(text, context, overrides)
    assert _found(findings, ("OP509", "OP506")) == _expected((GEN, text))


GUARDED_RUNNER = """
from fakeacc.runner_v1 import NPUModelRunner


class Runner(NPUModelRunner):
    def execute_model(self, scheduler_output, intermediate_tensors=None):
        # >>> block
        if hasattr(self, "payload_cache"):
            self.payload_cache.pop(scheduler_output, None)
        if self.kv_caches and hasattr(self, "mtp") and hasattr(self, "drafts"):
            print(self.mtp, self.drafts)
        if not hasattr(self, "late"):
            pass
        else:
            print(self.late)
        ready = hasattr(self, "flag") and self.flag
        chosen = self.pick if hasattr(self, "pick") else None
        print(self.payload_cache)  # !OP509
        if hasattr(self, "other"):
            print(self.unguarded)  # !OP509
        if self.first and hasattr(self, "first"):  # !OP509
            print(ready, chosen)
        # <<<
"""


def test_a_read_guarded_by_hasattr_is_no_missing_attribute() -> None:
    """issue 46: omni's GPU runners read ``self._downstream_payload_cache`` under
    ``hasattr(self, ...)`` and assign it only in a subclass's ``__init__``."""
    text = _dedent(GUARDED_RUNNER)
    context = _override_context(UPSTREAM)
    overrides = [checks.Override(GEN, "Runner", "execute_model", "NPUModelRunner", "execute_model")]
    findings = _verify(text, context, overrides)
    assert _found(findings, ("OP509", "OP506")) == _expected((GEN, text))


# --- helpers --------------------------------------------------------------------------------


def test_module_names_follow_the_package_layout() -> None:
    files = {
        "pkg/__init__.py": "a",
        "pkg/sub.py": "b",
        "pkg/inner/__init__.py": "c",
        "pkg/data.json": "d",
    }
    assert checks.module_names(files) == {"pkg": "a", "pkg.sub": "b", "pkg.inner": "c"}


# --- 6. arguments and unpacking -------------------------------------------------------------

ARGUMENT_SOURCES = {
    "pkg": "",
    "pkg.lib": _dedent(
        """
        import functools
        from dataclasses import KW_ONLY, dataclass, field
        from typing import ClassVar, NamedTuple


        def plain(a, b, c=None):
            return a


        def kwonly(a, *, flag=False):
            return a


        def posonly(a, /, b):
            return a


        def star(*args, **kwargs):
            return args


        @functools.lru_cache
        def cached(a):
            return a


        @some_registry.register
        def wrapped(a):
            return a


        class State(NamedTuple):
            first: int
            second: int
            third: int = 0


        @dataclass
        class Config:
            name: str
            size: int = 1
            tags: list = field(default_factory=list)
            hidden: int = field(default=0, init=False)
            limit: ClassVar[int] = 3
            _: KW_ONLY
            strict: bool = False


        @dataclass
        class Explicit:
            value: int

            def __init__(self, raw):
                self.value = int(raw)


        class Base:
            def __init__(self, config, device):
                self.config = config

            def run(self, inputs, *, steps=1):
                return inputs

            @staticmethod
            def helper(a, b):
                return a

            @classmethod
            def build(cls, config):
                return cls(config, None)

            @property
            def size(self):
                return 0


        class Shadowed(Base):
            def __init__(self, config, device):
                super().__init__(config, device)
                self.run = None
        """
    ),
    "pkg.reexport": "from pkg.lib import *\n",
}
ARGUMENT_CONTEXT = checks.Context(
    package="pkg.gen",
    sources=checks.PackageSources(ARGUMENT_SOURCES, frozenset({"pkg"})),
    checked_packages=frozenset({"pkg"}),
)
IMPORTS = "from pkg.lib import Base, Config, Explicit, Shadowed, State, cached, kwonly, plain\n"
ARGUMENT_CASES = [
    pytest.param("plain(1, 2, 3, 4)  # !OP510\n", id="too-many-positional"),
    pytest.param("plain(1, 2, d=4)  # !OP510\n", id="unknown-keyword"),
    pytest.param("kwonly(1, True)  # !OP510\n", id="keyword-only-given-by-position"),
    pytest.param("plain(1, 2, a=3)  # !OP510\n", id="given-twice"),
    pytest.param("plain(1)  # !OP510\n", id="required-left-out"),
    pytest.param(
        """
        from pkg.lib import posonly

        posonly(a=1, b=2)  # !OP510 !OP510
        """,
        id="positional-only-by-keyword",
    ),
    pytest.param(
        """
        def go(a, b, c, args, rest):
            plain(b, a, c)  # !OP510
            plain(a, b, c)
            plain(x, y)
            plain(*args)
            plain(1, **rest)
            plain(1, 2, 3, 4, *args)  # !OP510
        """,
        id="out-of-order-and-starred-arguments",
    ),
    pytest.param(
        """
        Config("n", 2, [], strict=True)
        Config(name="n")
        Config("n", 2, [], 0)  # !OP510
        Config(limit=3, name="n")  # !OP510
        Config()  # !OP510
        Explicit("1")
        Explicit(raw=1, value=2)  # !OP510
        Base(1, 2)
        Base(1)  # !OP510
        State(1, 2)
        State(1, 2, 3, 4)  # !OP510
        """,
        id="constructors-dataclass-namedtuple-init",
    ),
    pytest.param(
        """
        class Runner(Base):
            def go(self):
                self.run(1, steps=2)
                self.run(1, 2)  # !OP510
                super().run(inputs=1)
                Base.run(self, 1)
                Base.run(1)  # !OP510
                self.helper(1, 2)
                Base.helper(1, 2, 3)  # !OP510
                self.build(1)
                self.build(1, 2)  # !OP510
                self.size(1)


        class Other(Shadowed):
            def go(self):
                self.run(1, 2, 3)
        """,
        id="methods-static-class-property-shadowed",
    ),
    pytest.param(
        """
        from pkg.reexport import plain as again
        from pkg.lib import wrapped


        def go(plain):
            plain(1, 2, 3, 4, 5)
            cached(1, 2)  # !OP510
            wrapped(1, 2, 3)
            again(1, 2, 3, 4)  # !OP510

            def inner(a):
                return a

            inner(1, 2)  # !OP510
            from pkg.lib import kwonly as late

            late(1, 2)  # !OP510
        """,
        id="locals-decorators-star-reexports-local-imports",
    ),
    pytest.param(
        """
        class Runner(Base):
            def __init__(self, config, device):
                super().__init__(config, device)
                self.state: State | None = None

            def step(self):
                self.state = State(1, 2)

            def use(self):
                (first, second, third) = self.state
                (first, second) = self.state  # !OP510
                (second, first, third) = self.state  # !OP510
                (first, *rest) = self.state
                local = State(1, 2)
                (a, b) = local  # !OP510


        class Mixed(Base):
            def one(self):
                self.state = State(1, 2)

            def two(self):
                self.state = Config("n")

            def use(self):
                (a,) = self.state
        """,
        id="unpacking-namedtuple-values",
    ),
]


@pytest.mark.parametrize("code", ARGUMENT_CASES)
def test_arguments_against_parameters_and_fields(code: str) -> None:
    text = IMPORTS + _dedent(code)
    found = _found(_verify(text, ARGUMENT_CONTEXT), ["OP510"])
    assert found == _expected((GEN, text))


def test_an_argument_finding_names_the_call_the_definition_and_the_parameter() -> None:
    text = IMPORTS + "plain(1, 2, d=4)\n"
    (finding,) = [f for f in _verify(text, ARGUMENT_CONTEXT) if f.code.value == "OP510"]
    assert (finding.line, finding.col) == (2, 13)
    assert "`plain(...)`" in finding.message
    assert "pkg.lib.plain" in finding.message and "`d`" in finding.message


COPIED_UPSTREAM = """
from typing import NamedTuple


class State(NamedTuple):
    first: int
    second: int
    third: int
"""


@pytest.mark.parametrize(
    ("fields", "marks"),
    [
        pytest.param(["first", "second", "third", "extra"], [], id="omni-field-appended"),
        pytest.param(["first", "second", "extra"], ["class", "call", "unpack"], id="dropped"),
        pytest.param(["first", "third", "second"], ["class"], id="reordered"),
    ],
)
def test_a_copied_record_keeps_its_upstream_fields(fields: list[str], marks: list[str]) -> None:
    names = ", ".join(fields)
    lines = [
        "from typing import NamedTuple",
        "",
        "",
        "class State(NamedTuple):",
        *(f"    {name}: int" for name in fields),
        "",
        "",
        "class Runner:",
        "    def go(self):",
        f"        self.state = State({names})",
        "",
        "    def use(self):",
        f"        ({names}) = self.state",
    ]
    text = "\n".join(lines) + "\n"
    upstream = api.parse_upstream(_dedent(COPIED_UPSTREAM), "u.py", UPSTREAM_MODULE)
    context = checks.Context(upstream=upstream)
    copy = checks.Override(GEN, "", "State", "", "State")
    found = [f.line for f in _verify(text, context, [copy]) if f.code.value == "OP510"]
    line_of = {"class": 4, "call": 9 + len(fields), "unpack": 12 + len(fields)}
    assert sorted(found) == sorted(line_of[m] for m in marks)


# --- end to end on the synthetic runners ----------------------------------------------------


def _package_sources() -> checks.PackageSources:
    files = {
        path.relative_to(PACKAGES).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGES.rglob("*.py"))
    }
    return checks.PackageSources(checks.module_names(files), frozenset({"fakeacc", "fakeomni"}))


def _patches() -> PatchSet:
    base = api.parse_upstream(_upstream_text(), "v1")
    sources = {name: read_source(DATA / "omni" / name) for name in RUNNERS}
    return PatchSet(tuple(api.extract_text(s, n, base).module for n, s in sources.items()))


def _generate(patches: PatchSet, upstream_text: str) -> SyncResult:
    upstream = api.parse_upstream(upstream_text, "v", UPSTREAM_MODULE)
    return api.sync_patches(patches, upstream, tool="omni-port test").result


def _verify_generated(
    patches: PatchSet,
    result: SyncResult,
    upstream_text: str,
    sources: checks.PackageSources | None = None,
) -> tuple[dict[str, str], list[Finding]]:
    modules = {name: decode(result.files[name], name).text for name in RUNNERS}
    context = checks.Context(
        package="fakeomni.npu",
        sources=_package_sources() if sources is None else sources,
        upstream=api.parse_upstream(upstream_text, "u.py", UPSTREAM_MODULE),
        checked_packages=frozenset({"fakeacc", "fakeomni"}),
        unused_in_source=checks.unused_in_source_of(patches),
    )
    overrides = checks.overrides_of(patches)
    blocks = checks.blocks_of(patches)
    return modules, checks.verify(modules, result.placements, overrides, context, (), blocks)


def _upstream_text() -> str:
    return read_source(DATA / "upstream/v1/model_runner_v1.py").text


def test_synced_runners_verify_clean() -> None:
    patches = _patches()
    result = _generate(patches, _upstream_text())
    assert sum(1 for p in result.placements if p.status is Status.PLACED) > 10
    assert {o.upstream_owner for o in checks.overrides_of(patches)} >= {"NPUModelRunner"}
    _, findings = _verify_generated(patches, result, _upstream_text())
    assert [f for f in findings if f.severity is Severity.ERROR] == []
    # Calls of upstream's methods omni's blocks replaced are notes naming the block.
    assert {(f.code.value, f.severity) for f in findings} == {("OP516", Severity.NOTE)}


def test_without_package_sources_the_runners_get_notes_not_errors() -> None:
    patches = _patches()
    result = _generate(patches, _upstream_text())
    _, findings = _verify_generated(patches, result, _upstream_text(), checks.PackageSources())
    assert findings
    assert {f.code.value for f in findings} == {"OP506", "OP516"}
    assert {f.severity for f in findings} == {Severity.NOTE}


def test_upstream_renaming_a_local_a_block_reads_is_caught() -> None:
    lines = _upstream_text().split("\n")
    start = lines.index("    def execute_model(self, scheduler_output, intermediate_tensors=None):")
    end = lines.index("    def sample_tokens(self, grammar_output):")
    for index in range(start, end):
        lines[index] = re.sub(r"\bhidden_states\b", "model_output", lines[index])
    renamed = "\n".join(lines)
    patches = _patches()
    result = _generate(patches, renamed)
    _, findings = _verify_generated(patches, result, renamed)
    block = _placement(result.placements, "NPUARModelRunner.execute_model.block-03")
    assert block.status is Status.PLACED
    assert _found(findings, ["OP507"]) == [("npu_ar_model_runner.py", "OP507", block.start)]
    assert "`hidden_states`" in findings[0].message
    # The renaming reaches the omni edit of the construction too. The AR runner's merges
    # upstream's renamed argument (merge3); the generation runner's, inside a replaced
    # compound statement, is a conflict, and upstream's construction, left in place,
    # gives the omni field nothing.
    merged = _placement(result.placements, "NPUARModelRunner.execute_model.edit-01")
    assert merged.status is Status.PLACED and Rule.MERGE3 in merged.decided_by
    missing = [f for f in findings if f.code.value == "OP510"]
    assert sorted(f.path for f in missing) == [RUNNERS[2]]
    assert all("field `multimodal_outputs`" in f.message for f in missing)
    # Upstream's construction stands because the edit that replaced it is a conflict: the
    # finding names it, as OP515 names the conflict below.
    keeper = _placement(result.placements, "NPUGenerationModelRunner.execute_model.edit-02")
    assert keeper.status is Status.CONFLICT
    assert all(f"the conflict {keeper.block_id} (line" in f.message for f in missing)
    # The generation runner's conflict comments out the only reader of `model_kwargs`.
    (dead,) = [f for f in findings if f.code.value == "OP515"]
    assert (dead.path, dead.severity) == (RUNNERS[2], Severity.ERROR)
    assert "`model_kwargs`" in dead.message and "execute_model.block-02" in dead.message
    errors = {f.code.value for f in findings if f.severity is Severity.ERROR}
    assert errors == {"OP507", "OP510", "OP515"}


def test_stale_runners_against_a_changed_upstream() -> None:
    patches = _patches()
    result = _generate(patches, _upstream_text())
    changed = (
        _upstream_text()
        .replace("self.model = self.loader", "self.network = self.loader")
        .replace("def sample_tokens(self, grammar_output)", "def sample_tokens(self, g, out)")
    )
    modules, findings = _verify_generated(patches, result, changed)
    expected = sorted(
        [
            *_first_reads(modules, result.placements, r"self\.model\b", "OP509"),
            *_lines_of(modules, "    def sample_tokens(", "OP508"),
        ]
    )
    assert len(expected) >= 4
    assert _found([f for f in findings if f.severity is Severity.ERROR]) == expected


def _placement(placements: Sequence[Placement], suffix: str) -> Placement:
    return next(p for p in placements if p.block_id.endswith(suffix))


def _first_reads(
    modules: Mapping[str, str], placements: Sequence[Placement], pattern: str, code: str
) -> list[tuple[str, str, int]]:
    """(module, code, line) of the first line matching ``pattern`` in each placed block."""
    found = []
    for p in placements:
        if p.status is not Status.PLACED or p.start == 0:
            continue
        lines = modules[p.module].splitlines()[p.start - 1 : p.end]
        hits = [p.start + i for i, line in enumerate(lines) if re.search(pattern, line)]
        if hits:
            found.append((p.module, code, hits[0]))
    return found


def _lines_of(modules: Mapping[str, str], prefix: str, code: str) -> list[tuple[str, str, int]]:
    return [
        (name, code, number)
        for name, text in modules.items()
        for number, line in enumerate(text.splitlines(), start=1)
        if line.startswith(prefix)
    ]


# --- 7: a call run more often than both sources run it -------------------------------------

REPEAT_UPSTREAM = """
class NPUModelRunner:
    def execute_model(self, scheduler_output):
        self.prepare(scheduler_output)
        if self.kv_transfer:
            self.kv.handle_preemptions(scheduler_output.preempted)
        {upstream_extra}
        return self.run(scheduler_output)
"""

REPEAT_OLD = """
class Runner(NPUModelRunner):
    def execute_model(self, scheduler_output):
        {old_extra}
        self.prepare(scheduler_output)
        self.kv.handle_preemptions(scheduler_output.preempted)
        return self.run(scheduler_output)
"""

REPEAT_CASES = [
    pytest.param(
        "pass",
        "pass",
        """
        class Runner(NPUModelRunner):
            def execute_model(self, scheduler_output):
                self.prepare(scheduler_output)
                self.kv.handle_preemptions(scheduler_output.preempted)
                if self.kv_transfer:
                    self.kv.handle_preemptions(  # !OP512
                        scheduler_output.preempted
                    )
                return self.run(scheduler_output)
        """,
        id="omni-s-old-copy-beside-upstream-s-new-one",
    ),
    pytest.param(
        "self.kv.handle_preemptions(scheduler_output.preempted)",
        "pass",
        """
        class Runner(NPUModelRunner):
            def execute_model(self, scheduler_output):
                self.prepare(scheduler_output)
                self.kv.handle_preemptions(scheduler_output.preempted)
                if self.kv_transfer:
                    self.kv.handle_preemptions(scheduler_output.preempted)
                return self.run(scheduler_output)
        """,
        id="ok-upstream-runs-it-twice",
    ),
    pytest.param(
        "pass",
        "self.kv.handle_preemptions(scheduler_output.preempted)",
        """
        class Runner(NPUModelRunner):
            def execute_model(self, scheduler_output):
                self.kv.handle_preemptions(scheduler_output.preempted)
                self.prepare(scheduler_output)
                self.kv.handle_preemptions(scheduler_output.preempted)
                return self.run(scheduler_output)
        """,
        id="ok-the-old-runner-ran-it-twice",
    ),
    pytest.param(
        "pass",
        "pass",
        """
        class Runner(NPUModelRunner):
            def execute_model(self, scheduler_output):
                self.prepare(scheduler_output)
                self.kv.handle_preemptions(scheduler_output.preempted)
                if self.kv_transfer:
                    self.kv.handle_preemptions(scheduler_output.preempted, all=True)
                return self.run(scheduler_output)
        """,
        id="ok-other-arguments-are-another-call",
    ),
]


def _repeat_context(upstream_extra: str, old_extra: str, old: bool = True) -> checks.Context:
    upstream = _dedent(REPEAT_UPSTREAM.format(upstream_extra=upstream_extra))
    modules = {"gen": _dedent(REPEAT_OLD.format(old_extra=old_extra))} if old else {}
    return checks.Context(
        upstream=api.parse_upstream(upstream, "u.py", UPSTREAM_MODULE),
        sources=checks.PackageSources(modules, frozenset()),
    )


@pytest.mark.parametrize(("upstream_extra", "old_extra", "code"), REPEAT_CASES)
def test_a_call_run_more_often_than_both_sources_run_it(
    upstream_extra: str, old_extra: str, code: str
) -> None:
    text = _dedent(code)
    context = _repeat_context(upstream_extra, old_extra)
    findings = _verify(text, context, _copies(text, "Runner", "NPUModelRunner"))
    assert _found(findings, ["OP512"]) == _expected((GEN, text))


def test_a_repeated_call_names_its_lines_and_both_counts() -> None:
    text = _dedent(REPEAT_CASES[0].values[2])
    findings = _verify(
        text, _repeat_context("pass", "pass"), _copies(text, "Runner", "NPUModelRunner")
    )
    (found,) = [f for f in findings if f.code.value == "OP512"]
    assert found.message == (
        "`self.kv.handle_preemptions(scheduler_output.preempted)` runs 2 times in "
        "Runner.execute_model (lines 4, 6), more often than in the new upstream method (1) "
        "and in the old runner (1)"
    )
    # Without the old runner there is nothing to compare with: no finding.
    alone = _repeat_context("pass", "pass", old=False)
    assert not [
        f
        for f in _verify(text, alone, _copies(text, "Runner", "NPUModelRunner"))
        if f.code.value == "OP512"
    ]


# --- check 8: a placed row names lines of the output ------------------------------------------


def _row(kind: BlockKind, status: Status, lines: tuple[int, int]) -> Placement:
    return Placement(
        f"runner.R.step.{kind.value}", "runner.py", "R", "step", kind, False, status, 1.0, *lines
    )


def test_a_placed_row_with_no_output_lines_is_an_error() -> None:
    """A row that says "placed" with nothing of it in the output (not even upstream's
    statements that stand for it) is OP513; a deletion holds no lines by nature, a
    conflict is OP310's business, and a row with lines is fine."""
    rows = [
        _row(BlockKind.REPLACEMENT, Status.PLACED, (0, 0)),
        _row(BlockKind.INSERTION, Status.PLACED, (7, 6)),
        _row(BlockKind.REPLACEMENT, Status.PLACED, (3, 5)),
        _row(BlockKind.DELETION, Status.PLACED, (0, 0)),
        _row(BlockKind.INSERTION, Status.CONFLICT, (0, 0)),
    ]
    found = list(row_findings(rows, frozenset({"runner.py"})))
    assert [f.code for f in found] == [Code.OP513, Code.OP513]
    assert "runner.R.step.replacement is reported placed" in found[0].message
    assert not list(row_findings(rows, frozenset({"other.py"})))


def test_op310_sends_to_a_rank_only_a_conflict_whose_region_lists_candidates() -> None:
    """A region that lists no candidate place says the routes that need none: an edit in
    place then `continue`, `resolve --at LINE`, `resolve --drop`."""
    text = (
        "class R:\n" + conflict_region("m.R.f.block-01", 2) + conflict_region("m.R.f.block-02", 0)
    )
    ranked, unlisted = conflict_findings({"m.py": text})
    assert [(f.code, f.line) for f in (ranked, unlisted)] == [(Code.OP310, 2), (Code.OP310, 9)]
    assert "`omni-port resolve m.R.f.block-01 --at '#K'`" in ranked.message
    assert "#K" not in unlisted.message
    assert "`omni-port continue`" in unlisted.message
    assert "`omni-port resolve m.R.f.block-02 --at LINE`" in unlisted.message


# --- check 10: dead stores ------------------------------------------------------------------

DEAD_UPSTREAM = """
class NPUModelRunner:
    def step(self, batch):
        unused = batch.size
        return batch

    def _free_buffers(self):
        pass

    def _sample(self, logits):
        return logits

    def finish(self):
        pass
"""

DEAD_CASES = [
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                output = self.run(batch)  # !OP515
                return batch
        """,
        id="a-binding-nothing-reads",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                output = self.run(batch)  # !OP515
                output = self.other(batch)
                return output
        """,
        id="a-reassignment-before-any-read",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                total = 0  # !OP515
                if batch:
                    total = 1
                else:
                    total = 2
                return total
        """,
        id="every-branch-rebinds-it",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                total = 0
                if batch:
                    total = 1
                return total
        """,
        id="ok-one-branch-keeps-it",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                total = 0
                for item in batch:
                    total += item
                return total
        """,
        id="ok-read-by-the-next-iteration",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                last = None
                while batch:
                    if last is not None:
                        self.finish()
                    last = batch.pop()
                return 0
        """,
        id="ok-read-at-the-loop-head",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                result = None
                try:
                    result = self.run(batch)
                    self.finish()
                except ValueError:
                    return result
                return result
        """,
        id="ok-a-handler-reads-what-the-body-bound",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                scale = 2
                def helper(x):
                    return x * scale
                return helper(batch)
        """,
        id="ok-read-by-a-nested-function",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                first, second = batch
                _ignored = self.run(batch)
                payload: list[object] = []
                if batch:
                    payload = [1]
                else:
                    payload = [2]
                return payload
        """,
        id="ok-unpacking-underscore-and-a-typed-declaration",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                count: int = len(batch)  # !OP515
                return batch
        """,
        id="a-typed-declaration-nothing-reads",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                names = [n for n in batch]
                other = {k: v for k, v in names}
                return other
        """,
        id="ok-read-in-a-comprehension",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                def helper(x):
                    scaled = x * 2  # !OP515
                    return x
                return helper(batch)
        """,
        id="a-nested-function-s-binding-nothing-reads",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                if batch:
                    def helper(x):
                        async def inner():
                            late = x  # !OP515
                            return None
                        return inner
                    return helper
                class Local:
                    def run(self):
                        spare = 1  # !OP515
                        return self
                return Local
        """,
        id="deeper-nested-functions-and-a-nested-class-s-method",
    ),
    pytest.param(
        """
        class Runner:
            def step(self, batch):
                total = 0
                def helper(x):
                    nonlocal total
                    total = x
                    scale = 2
                    return lambda y: y * scale
                helper(batch)
                return total
        """,
        id="ok-nonlocal-and-read-by-a-lambda-in-the-nested-function",
    ),
]


def _dead_context(old: str = "") -> checks.Context:
    modules = {"gen": _dedent(old)} if old else {}
    return checks.Context(
        upstream=api.parse_upstream(_dedent(DEAD_UPSTREAM), "u.py", UPSTREAM_MODULE),
        sources=checks.PackageSources(modules, frozenset()),
    )


@pytest.mark.parametrize("code", DEAD_CASES)
def test_dead_stores_of_copied_methods(code: str) -> None:
    text = _dedent(code)
    findings = _verify(text, _dead_context(), _copies(text, "Runner", "NPUModelRunner"))
    assert _found(findings, ["OP515"]) == _expected((GEN, text))
    assert all(f.severity is Severity.ERROR for f in findings if f.code.value == "OP515")


def test_a_dead_store_a_source_had_is_a_note_that_says_which() -> None:
    text = _dedent(
        """
        class Runner:
            def step(self, batch):
                unused = batch.size
                spare = batch.size
                late = 0
                return batch
        """
    )
    old = """
        class Runner:
            def step(self, batch):
                spare = 1
                return batch
        """
    findings = _verify(text, _dead_context(old), _copies(text, "Runner", "NPUModelRunner"))
    dead = [(f.line, f.severity, f.message) for f in findings if f.code.value == "OP515"]
    assert dead == [
        (
            3,
            Severity.NOTE,
            "`unused` is bound here and nothing in Runner.step reads it (upstream's own "
            "method has the same dead store)",
        ),
        (
            4,
            Severity.NOTE,
            "`spare` is bound here and nothing in Runner.step reads it (the old runner's "
            "method has the same dead store)",
        ),
        (5, Severity.ERROR, "`late` is bound here and nothing in Runner.step reads it"),
    ]


NESTED_DEAD_UPSTREAM = """
class NPUModelRunner:
    def step(self, batch):
        def helper(x):
            unused = x.size
            return x
        return helper(batch)
"""


def test_a_nested_dead_store_upstream_s_nested_function_has_is_a_note() -> None:
    """Compared within the nested function of the same path: upstream's ``helper`` has
    ``unused``; ``other`` has it too, and is no ``helper``."""
    text = _dedent(
        """
        class Runner:
            def step(self, batch):
                def helper(x):
                    unused = x.size
                    return x
                def other(x):
                    unused = x.size
                    return x
                return helper(other(batch))
        """
    )
    context = checks.Context(
        upstream=api.parse_upstream(_dedent(NESTED_DEAD_UPSTREAM), "u.py", UPSTREAM_MODULE)
    )
    findings = _verify(text, context, _copies(text, "Runner", "NPUModelRunner"))
    dead = [(f.line, f.severity, f.message) for f in findings if f.code.value == "OP515"]
    assert dead == [
        (
            4,
            Severity.NOTE,
            "`unused` is bound here and nothing in Runner.step.helper reads it (upstream's "
            "own method has the same dead store)",
        ),
        (7, Severity.ERROR, "`unused` is bound here and nothing in Runner.step.other reads it"),
    ]


def test_a_nested_dead_store_whose_reader_a_conflict_holds_names_the_conflict() -> None:
    region = conflict_region("gen.Runner.step.block-01", 0, "            ")
    text = (
        _dedent(
            """
        class Runner:
            def step(self, batch):
                def helper(x):
                    output = self.run(x)
        """
        )
        + region.replace("self.hook()", "self.hook(output)")
        + "            return x\n"
        + "        return helper(batch)\n"
    )
    findings = _verify(text, _dead_context(), _copies(text, "Runner", "NPUModelRunner"))
    (dead,) = [f for f in findings if f.code.value == "OP515"]
    assert (dead.line, dead.severity) == (4, Severity.ERROR)
    assert (
        "nothing in Runner.step.helper reads it; the conflict gen.Runner.step.block-01 "
        + ("(line 5)")
        in dead.message
    )


def test_a_dead_store_whose_reader_is_in_a_conflict_region_names_the_conflict() -> None:
    region = conflict_region("gen.Runner.step.block-01", 0, "        ")
    text = (
        _dedent(
            """
        class Runner:
            def step(self, batch):
                output = self.run(batch)
        """
        )
        + region.replace("self.hook()", "self.hook(output)")
        + "        return batch\n"
    )
    findings = _verify(text, _dead_context(), _copies(text, "Runner", "NPUModelRunner"))
    (dead,) = [f for f in findings if f.code.value == "OP515"]
    assert (dead.line, dead.severity) == (3, Severity.ERROR)
    assert "the conflict gen.Runner.step.block-01 (line 4)" in dead.message


def test_an_argument_finding_at_a_statement_a_conflict_replaced_names_the_conflict() -> None:
    """Upstream's statement stands only while the conflict that replaced it in its base
    does: an OP510 there names that conflict; one at a statement it did not replace, and
    one where the block is placed, do not."""
    ident = "gen.Runner.step.edit-01"
    text = (
        "class Runner:\n    def step(self, batch):\n"
        + conflict_region(ident, 0, "        ")
        + "        out = self.pack(batch, strict=True)\n"
        + "        other = self.wrap(out)\n"
        + "        return other\n"
    )
    lines = text.split("\n")
    region = 3
    kept_line = lines.index("        out = self.pack(batch, strict=True)") + 1
    block = Block(
        id=ident,
        owner="Runner",
        member="step",
        kind=BlockKind.REPLACEMENT,
        marked=False,
        code="out = self.pack_stages(batch)\n",
        anchor=Anchor((), (), (), ("out = self.pack(batch)",)),
        origin=Origin("omni.py", 3, 3),
    )
    row = Placement(ident, GEN, "Runner", "step", "replacement", False, Status.CONFLICT, 0.9)
    found = [
        Finding(Code.OP510, GEN, line, "`f(...)` misfits", 9) for line in (kept_line, kept_line + 1)
    ]
    trees = {GEN: ast.parse(text)}
    overrides = _copies(text, "Runner", "NPUModelRunner")
    named, kept = with_keepers(found, {GEN: text}, trees, overrides, [row], [block])
    assert named.message == f"`f(...)` misfits; the conflict {ident} (line {region}) " + (
        "replaced this statement in its base, which stays until it is resolved: resolve the "
        "conflict first"
    )
    assert kept == found[1]
    placed = replace(row, status=Status.PLACED)
    assert with_keepers(found, {GEN: text}, trees, overrides, [placed], [block]) == found


def test_only_copied_methods_are_checked_for_dead_stores() -> None:
    text = _dedent(
        """
        class Runner:
            def owned(self, batch):
                output = self.run(batch)
                return batch
        """
    )
    assert [f for f in _verify(text, _dead_context()) if f.code.value == "OP515"] == []


# --- check 11: hook calls upstream's own method makes ----------------------------------------

HOOK_UPSTREAM = """
class NPUModelRunner:
    def step(self, batch):
        logits = self._sample(batch)
        with record("free"):
            self._free_buffers()
        self.callback = None
        return logits

    def _free_buffers(self):
        pass

    def _sample(self, logits):
        return logits
"""

HOOK_GENERATED = """
class Runner(NPUModelRunner):
    def step(self, batch):
        logits = self._sample(batch)
        return logits
"""


def _hook_block(
    replaced: tuple[str, ...], status: Status = Status.PLACED
) -> tuple[Block, Placement]:
    block = Block(
        "gen.Runner.step.edit-01",
        "Runner",
        "step",
        BlockKind.DELETION,
        False,
        "",
        Anchor(replaced=replaced),
        Origin("omni.py", 1, 1),
    )
    row = Placement(block.id, GEN, "Runner", "step", BlockKind.DELETION, False, status, 1.0)
    return block, row


def _hooks(text: str, block: Block | None = None, row: Placement | None = None) -> list[Finding]:
    context = checks.Context(
        upstream=api.parse_upstream(_dedent(HOOK_UPSTREAM), "u.py", UPSTREAM_MODULE)
    )
    overrides = [checks.Override(GEN, "Runner", "step", "NPUModelRunner", "step")]
    findings = checks.verify(
        {GEN: _dedent(text)},
        [row] if row else [],
        overrides,
        context,
        (),
        [block] if block else [],
    )
    return [f for f in findings if f.code.value == "OP516"]


def test_a_hook_call_upstream_makes_and_the_copy_lost_is_an_error() -> None:
    """At the copy's line where upstream's call would stand (before upstream's next
    statement the copy has), naming both upstream lines, not at the method's ``def``."""
    (lost,) = _hooks(HOOK_GENERATED)
    assert (lost.line, lost.col, lost.severity) == (4, 9, Severity.ERROR)
    assert lost.message.startswith(
        "Runner.step no longer calls `self._free_buffers()`, which upstream's "
        "NPUModelRunner.step calls (upstream line 5) before `return logits` (upstream "
        "line 7, here): "
    )


@pytest.mark.parametrize(
    ("generated", "line", "place"),
    [
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    logits = self._sample(batch)
                    self.callback = None
                    return logits
            """,
            4,
            "before `self.callback = None` (upstream line 6, here)",
            id="before-the-next-statement",
        ),
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    logits = self._sample(batch)
                    with record("free"):
                        self.log(batch)
                        self.release()
                    self.callback = None
                    return logits
            """,
            4,
            "inside `with record('free'):` (upstream line 4, here)",
            id="inside-the-statement-around-it",
        ),
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    logits = self._sample(batch)
            """,
            3,
            "after `logits = self._sample(batch)` (upstream line 3, here)",
            id="after-the-statement-before-it",
        ),
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    return self._sample(batch) or batch
            """,
            2,
            "",
            id="at-the-def-when-nothing-stands-for-upstream",
        ),
    ],
)
def test_a_lost_hook_call_is_reported_where_it_would_stand(
    generated: str, line: int, place: str
) -> None:
    (lost,) = _hooks(generated)
    assert lost.line == line
    assert lost.message.startswith(
        "Runner.step no longer calls `self._free_buffers()`, which upstream's "
        f"NPUModelRunner.step calls (upstream line 5){' ' * bool(place)}{place}: the runner"
    )


NESTED_HOOK_UPSTREAM = """
class NPUModelRunner:
    def step(self, batch):
        if batch:
            self.prepare()
        else:
            self.idle()
            self._free_buffers()
            self.report()
        return batch

    def _free_buffers(self):
        pass
"""


def test_a_lost_hook_call_in_an_else_is_reported_in_the_copy_s_else() -> None:
    """The copy's counterpart is looked for in the same branch: ``self.report()`` in the
    ``if`` body is not the one the call stood before."""
    generated = _dedent(
        """
        class Runner(NPUModelRunner):
            def step(self, batch):
                if batch:
                    self.report()
                else:
                    self.idle()
                    self.report()
                return batch
        """
    )
    context = checks.Context(
        upstream=api.parse_upstream(_dedent(NESTED_HOOK_UPSTREAM), "u.py", UPSTREAM_MODULE)
    )
    overrides = [checks.Override(GEN, "Runner", "step", "NPUModelRunner", "step")]
    findings = checks.verify({GEN: generated}, [], overrides, context)
    (lost,) = [f for f in findings if f.code.value == "OP516"]
    assert (lost.line, lost.col) == (7, 13)
    assert "calls (upstream line 7) before `self.report()` (upstream line 8, here)" in lost.message


@pytest.mark.parametrize(
    "replaced",
    [
        pytest.param(("with record('free'): [body 0123456789ab]",), id="its-compound-statement"),
        pytest.param(("self._free_buffers()",), id="its-statement"),
        pytest.param(
            ("logits = self._sample(batch)", "self.callback = None"), id="statements-around-it"
        ),
    ],
)
def test_a_hook_call_a_placed_block_replaced_is_a_note_naming_it(replaced: tuple[str, ...]) -> None:
    block, row = _hook_block(replaced)
    (lost,) = _hooks(HOOK_GENERATED, block, row)
    assert lost.severity is Severity.NOTE
    what = "statements around the one" if len(replaced) > 1 else "statement"
    assert lost.message.endswith(
        f": omni's gen.Runner.step.edit-01 replaced the {what} that made it"
    )


def test_a_hook_call_note_points_at_the_block_that_replaced_it() -> None:
    """The note names the output line where the block stands, not the method's def line:
    its first line, or for a deletion (no lines) the line of its next neighbour."""
    block, row = _hook_block(("self._free_buffers()",))
    (lost,) = _hooks(HOOK_GENERATED, block, replace(row, start=3, end=3))
    assert lost.line == 3
    gone = replace(block, anchor=replace(block.anchor, after=("return logits",)))
    (lost,) = _hooks(HOOK_GENERATED, gone, row)
    assert lost.line == 4


TWO_HEADERS = """
class NPUModelRunner:
    def step(self, batch):
        with record("free"):
            logits = self._sample(batch)
        self.callback = None
        with record("free"):
            self._free_buffers()
        return logits

    def _free_buffers(self):
        pass

    def _sample(self, logits):
        return logits
"""


def test_a_hook_call_note_names_the_block_at_its_statement_among_equal_headers() -> None:
    """Two blocks replaced a `with record("free")`, each its own: the note names the one
    whose neighbours are those of the statement that made the call, not the first."""
    header = "with record('free'): [body 0123456789ab]"
    first, row = _hook_block((header,))
    first = replace(first, anchor=Anchor(after=("self.callback = None",), replaced=(header,)))
    second = replace(
        first,
        id="gen.Runner.step.edit-02",
        anchor=Anchor(
            before=("self.callback = None",), after=("return logits",), replaced=(header,)
        ),
    )
    rows = [row, replace(row, block_id=second.id)]
    context = checks.Context(
        upstream=api.parse_upstream(_dedent(TWO_HEADERS), "u.py", UPSTREAM_MODULE)
    )
    overrides = [checks.Override(GEN, "Runner", "step", "NPUModelRunner", "step")]
    findings = checks.verify(
        {GEN: _dedent(HOOK_GENERATED)}, rows, overrides, context, (), [first, second]
    )
    (lost,) = [f for f in findings if f.code.value == "OP516"]
    assert lost.message.endswith(
        ": omni's gen.Runner.step.edit-02 replaced the statement that made it"
    )


def test_a_hook_call_a_conflicting_block_would_replace_is_still_an_error() -> None:
    block, row = _hook_block(("self._free_buffers()",), Status.CONFLICT)
    (lost,) = _hooks(HOOK_GENERATED, block, row)
    assert lost.severity is Severity.ERROR


@pytest.mark.parametrize(
    "generated",
    [
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    logits = self._sample(batch)
                    if batch:
                        self._free_buffers()
                    return logits
            """,
            id="called-elsewhere",
        ),
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    super()._free_buffers()
                    return self._sample(batch)
            """,
            id="through-super",
        ),
        pytest.param(
            """
            class Runner(NPUModelRunner):
                def step(self, batch):
                    self.on_done(self._free_buffers)
                    return self._sample(batch)
            """,
            id="handed-on-as-a-callback",
        ),
    ],
)
def test_a_hook_the_copy_still_names_is_not_lost(generated: str) -> None:
    assert _hooks(generated) == []


def test_a_dead_store_of_a_statement_a_conflict_replaced_names_the_conflict() -> None:
    """A placed edit stops reading upstream's binding while the conflict that deleted it in
    its base keeps it (make sync's `_update_states.edit-04` resolved beside edit-03's
    conflict): the OP515 is that conflict's, and says so once."""
    ident = "gen.Runner.step.edit-01"
    text = (
        "class Runner:\n    def step(self, batch):\n"
        + conflict_region(ident, 0, "        ")
        + "        count = batch.count\n"
        + "        return batch\n"
    )
    store = text.split("\n").index("        count = batch.count") + 1
    block = Block(
        id=ident,
        owner="Runner",
        member="step",
        kind=BlockKind.DELETION,
        marked=False,
        code="",
        anchor=Anchor((), (), (), ("count = batch.count",)),
        origin=Origin("omni.py", 3, 3),
    )
    row = Placement(ident, GEN, "Runner", "step", "deletion", False, Status.CONFLICT, 0.9)
    dead = Finding(Code.OP515, GEN, store, "`count` is bound here and nothing reads it", 9)
    trees = {GEN: ast.parse(text)}
    overrides = _copies(text, "Runner", "NPUModelRunner")
    (named,) = with_keepers([dead], {GEN: text}, trees, overrides, [row], [block])
    assert named.message.startswith(dead.message + f"; the conflict {ident} (line 3)")
    assert named.message.count("resolve the conflict first") == 1
    (again,) = with_keepers([named], {GEN: text}, trees, overrides, [row], [block])
    assert again == named
