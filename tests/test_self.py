"""The project checks itself: documented codes, committed outputs, no third-party code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from omni_port.model import Code

ROOT = Path(__file__).resolve().parent.parent


def test_every_code_is_documented_and_every_documented_code_exists() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| (OP\d{3}) \| (.+?) \|$", readme, re.MULTILINE))
    known = {code.value: code.description for code in Code}
    assert set(known) - set(documented) == set(), "codes missing from the README"
    assert set(documented) - set(known) == set(), "README documents unknown codes"
    assert documented == known


def test_the_readme_package_table_names_every_module_and_nothing_else() -> None:
    """The table of "The package and its API" lists every subpackage (``name/``) and
    top-level module (``name.py``) of omni_port, and nothing that is no longer there: it
    had lost ``v2/`` and ``runtime.py`` as they grew. Only the first column counts."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## The package and its API\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (.+?) \| .+ \|$", section, re.MULTILINE)
    listed = {name for row in rows for name in re.findall(r"`([^`]+)`", row)}
    package = ROOT / "omni_port"
    subpackages = {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    present = subpackages | {p.name for p in package.glob("*.py")}
    assert present - listed == set(), "missing from the README's package table"
    assert listed - present == set(), "the README's package table names what is not there"


def test_no_third_party_runner_code_is_tracked() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    allowed = re.compile(r"(^|/)(README\.md|__init__\.py|\.gitignore|[^/]*\.lock)$")
    for name in tracked:
        if name.startswith(("patches/", "generated/")):
            assert allowed.search(name), f"{name} is derived from third-party code"


def test_the_readme_api_sample_runs() -> None:
    """The text half of the README's API sample, on the synthetic upgrade fixture."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("`omni_port.api` is what", 1)[1]
    sample = section.split("```python\n", 1)[1].split("```", 1)[0]
    text_part = sample.split("\nsettings = ", 1)[0]  # the rest downloads a release
    data = ROOT / "tests" / "data" / "upgrade"
    scope = {
        "base_text": (data / "v1.py").read_text(encoding="utf-8"),
        "runner_text": (data / "omni.py").read_text(encoding="utf-8"),
        "upstream_text": (data / "v2.py").read_text(encoding="utf-8"),
    }
    exec(compile(text_part, "README.md", "exec"), scope)
    ported = scope["ported"]
    assert "record_omni_stats" in ported.text()
    assert ported.synced.placements


def test_the_readme_sets_up_with_two_commands_and_ci_runs_the_test_one() -> None:
    """A fresh machine needs `make sync` (the main job) and `make test`, nothing else."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Set up", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make sync", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\nmake test\n" in ci


def test_every_design_rule_cited_is_written_down() -> None:
    """The code, the notes and the README cite design rules by number: each is in
    docs/design.md, and none cites a document the repository does not hold."""
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    written = set(re.findall(r"^(\d+)\. \*\*", design, re.MULTILINE))
    cited: set[str] = set()
    files = [*ROOT.glob("omni_port/**/*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("bench/*")]
    for path in [*files, ROOT / "README.md"]:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        stray = re.search(r"\bDESIGN,? (?:rule|intent)", text)
        assert stray is None, f"{path} cites a design document the repository does not hold"
        for found in re.finditer(r"docs/design\.md,? rules? (\d+)(?: and (\d+))?", text):
            cited.update(n for n in found.groups() if n)
    assert cited, "the checker finds the citations"
    assert cited <= written, f"rules cited but not written down: {sorted(cited - written)}"
