"""verify on seeded breakage: golden cases under tests/data/verify/seeded, one per directory.

``clean/`` holds sound inputs: the generated modules (``generated/``), the package sources
they are checked against (``sources/``: a fake vLLM, a fake vllm-ascend whose
``worker/runner.py`` is the upstream of the copies, a fake vllm-omni) and ``case.toml``.
Every other case replaces some of those files with a seeded breakage and inherits the
rest. ``expected.txt`` lists the findings as ``path:line:col: CODE`` (set
OMNI_PORT_UPDATE_GOLDEN=1 to rewrite it, then read the diff). A ``# >>> block`` ... ``# <<<``
pair of comment lines in a generated module fences a placed block.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from omni_port import api
from omni_port.model import Finding, Placement, Status
from omni_port.verify import checks
from tests.golden import DATA, cases, check_file

SEEDED = DATA / "verify" / "seeded"


def _files(case: str) -> dict[str, str]:
    """The case's files over the clean ones, by path relative to the case directory."""
    files: dict[str, str] = {}
    for root in dict.fromkeys([SEEDED / "clean", SEEDED / case]):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name != "expected.txt":
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return files


def _blocks(name: str, text: str) -> list[Placement]:
    placements = []
    start, owner, member = 0, "", ""
    for number, line in enumerate(text.splitlines(), start=1):
        if found := re.match(r"class (\w+)", line):
            owner = found[1]
        if found := re.match(r"    def (\w+)", line):
            member = found[1]
        if "# >>> block" in line:
            start = number
        elif "# <<<" in line:
            ident = f"{name.removesuffix('.py')}.{owner}.{member}.block-{len(placements) + 1:02d}"
            placements.append(
                Placement(ident, name, owner, member, "insertion", True, Status.PLACED, 1.0,
                          start, number)
            )  # fmt: skip
    return placements


def _override(module: str, text: str) -> checks.Override:
    ours, _, theirs = text.partition(" = ")
    owner, _, name = ours.rpartition(".")
    upstream_owner, _, upstream_name = theirs.rpartition(".")
    return checks.Override(module, owner, name, upstream_owner, upstream_name)


def verify_case(case: str) -> list[Finding]:
    files = _files(case)
    config = tomllib.loads(files["case.toml"])
    generated = {
        path.removeprefix("generated/"): text
        for path, text in files.items()
        if path.startswith("generated/")
    }
    sources = {
        path.removeprefix("sources/"): text
        for path, text in files.items()
        if path.startswith("sources/")
    }
    upstream_path = config["upstream"].replace(".", "/") + ".py"
    upstream = api.parse_upstream(sources[upstream_path], upstream_path, config["upstream"])
    checked = frozenset(config["checked"])
    context = checks.Context(
        package=config["package"],
        sources=checks.PackageSources(checks.module_names(sources), checked),
        upstream=upstream,
        checked_packages=checked,
    )
    overrides = []
    for line in config["copies"]:
        module, _, copy = line.partition(" ")
        overrides.append(_override(module, copy))
    placements = [p for name, text in generated.items() for p in _blocks(name, text)]
    return checks.verify(generated, placements, overrides, context)


@pytest.mark.parametrize("case", cases("verify/seeded"))
def test_seeded_breakage(case: str) -> None:
    findings = verify_case(case)
    actual = "".join(f"{f.path}:{f.line}:{f.col}: {f.code.value}\n" for f in findings)
    check_file(SEEDED / case / "expected.txt", actual)


def test_the_unseeded_inputs_are_clean_and_every_seed_is_caught() -> None:
    assert verify_case("clean") == []
    for case in cases("verify/seeded"):
        if case != "clean":
            assert verify_case(case), f"{case}: the seeded breakage went unnoticed"


def test_a_dropped_field_is_named_at_its_root() -> None:
    findings = verify_case("field-dropped")
    root = next(f for f in findings if f.code.value == "OP510" and "drops its field" in f.message)
    assert "`ExecuteModelState`" in root.message and "`batch_desc`" in root.message
    text = (SEEDED / "field-dropped" / "generated" / "npu_ar_model_runner.py").read_text()
    lines = text.splitlines()
    construction = next(i for i, line in enumerate(lines, 1) if "= ExecuteModelState(" in line)
    unpacking = lines.index("    def sample_tokens(self, grammar_output):") + 2  # its "("
    assert lines[unpacking - 1] == "        ("
    assert f"npu_ar_model_runner.py:{construction}" in root.message
    assert f"npu_ar_model_runner.py:{unpacking}" in root.message


def test_every_case_directory_only_overrides_clean_files_or_adds_sources() -> None:
    clean = set(_files("clean"))
    for case in cases("verify/seeded"):
        own = {
            p.relative_to(SEEDED / case).as_posix()
            for p in (SEEDED / case).rglob("*")
            if p.is_file() and p.name != "expected.txt"
        }
        assert all(path in clean or path.startswith("sources/") for path in own), case
        assert (SEEDED / case / "expected.txt").is_file(), case
