"""``[tool.omni-port]`` of the host repository's pyproject.toml; every key is also a CLI flag."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources.platform import PLATFORMS, Platform
from omni_port.sources.upstream import INSTALLED_SUFFIX


@dataclass(frozen=True, slots=True)
class Config:
    """Defaults for every command; a CLI flag of the same name wins.

    The defaults of the keys that name a platform's inputs and outputs (``source``,
    ``upstream``, ``patches``, ``generated``, ``upstream-class``) are the NPU platform's;
    ``platform = "gpu"`` makes them the GPU platform's (``sources.platform``)."""

    #: Which runners the workspace keeps: ``npu`` (vllm-ascend's ``NPUModelRunner``),
    #: ``gpu`` (vLLM's ``GPUModelRunner``) or ``gpu-v2`` (vLLM's Model Runner V2).
    platform: str = "npu"
    #: Where the omni runners come from: ``vllm-omni==X``, a directory, or files.
    source: str = "vllm-omni==0.30.0"
    #: Upstream the runners were ported from (``vllm-ascend==X``, a path, ``installed``).
    base: str = ""
    #: Upstream to port onto.
    upstream: str = "vllm-ascend==0.30.0rc2"
    #: Patches directory.
    patches: str = "patches"
    #: Output directory of sync.
    generated: str = "generated"
    #: Upstream class the runner classes copy methods from.
    upstream_class: str = "NPUModelRunner"
    #: Markdown catalog checked by ``check``.
    catalog: str = ""
    #: Upstream history sync reads: ``auto`` (the releases around the base and the
    #: upstream, or the commits of ``upstream-repo``), or ``none``.
    history: str = "auto"
    #: A local git clone of vllm-ascend ("" = none): upstream history is its commits that
    #: change the runner module (main and release branches) and the releases newer than
    #: it, and base detection ranks its commits.
    upstream_repo: str = ""
    #: vLLM-Omni's Model Runner V2 runners (``vllm_omni/worker_v2``) to compose with the
    #: NPU V2 runner; "" leaves V2 off (``sync``, ``verify`` and ``check`` do V1 only).
    v2_source: str = ""
    #: vllm-ascend whose V2 runner the composition extends ("" = ``upstream``).
    v2_upstream: str = ""
    #: The vLLM release that vllm-ascend runs on ("" = the one it pairs with by version).
    v2_vllm_base: str = ""
    #: Candidate vLLM releases of omni's per-method delta, separated by spaces, the target
    #: first ("" = the release omni targets and the minors around it).
    v2_vllm: str = ""
    #: Output directory of the composed V2 runners.
    v2_generated: str = "generated/v2"
    #: Reviewed V2 methods whose NPU override omni's replacement shadows ("" = none).
    v2_allow: str = ""
    #: Reviewed malformed markers of sources this workspace does not own (a release's), a
    #: file of ``FILE:LINE: CODE  reason`` lines ("" = none): each listed one is a note of
    #: ``extract``, ``upgrade`` and ``check``; any other stops them.
    marker_allow: str = ""
    #: What is downloaded of a wheel: ``members`` (the files read, by ranged requests,
    #: each checked against the wheel's RECORD) or ``whole`` (the archive, checked
    #: against the index's sha256, as pip does).
    downloads: str = "members"
    #: Directory the configuration was read from; relative paths start here.
    root: str = "."
    #: The file the configuration was read from ("" for the defaults), for diagnostics.
    file: str = ""

    @property
    def platform_info(self) -> Platform:
        """What the configured platform's runners copy, and from where."""
        return PLATFORMS[self.platform]

    def path(self, value: str) -> Path:
        """A configured path, relative to the configuration file."""
        candidate = Path(value)
        return candidate if candidate.is_absolute() else Path(self.root) / candidate

    # Outputs (headers, the lock, patch files, the catalog) record paths relative to the
    # configuration's folder, the repository root: their bytes must not depend on the
    # working directory a command ran in.

    def recorded_path(self, path: str | Path) -> str:
        """A path as outputs record it: relative to the root (POSIX), absolute outside it."""
        absolute = Path(os.path.abspath(path))
        try:
            return absolute.relative_to(os.path.abspath(self.root)).as_posix() or "."
        except ValueError:
            return absolute.as_posix()

    def recorded_spec(self, text: str) -> str:
        """A source spec as outputs record it: a path as ``recorded_path``, else as is."""
        git = _git_spec(text)
        if git is not None:
            return f"{self.recorded_path(git[0])}@{git[1]}"
        return self.recorded_path(text) if _is_path_spec(text) else text

    def given_spec(self, recorded: str) -> str:
        """A recorded spec (from a lock or patch file) as this working directory reads it;
        the label of an installed package (``vllm-ascend==0.23.0 (installed)``) reads as
        ``installed``."""
        if recorded.endswith(INSTALLED_SUFFIX):
            return "installed"
        return _relative_spec(recorded, Path(self.root))

    def recorded_paths(self, paths: Iterable[str]) -> dict[str, str]:
        """Each of ``paths`` that names an existing file or folder, as given -> as recorded
        (release labels such as ``vllm-omni==0.24.0/...`` name none and are left out)."""
        return {path: self.recorded_path(path) for path in paths if path and Path(path).exists()}


#: Where the configuration came from: not keys of the table.
_ORIGIN = ("root", "file")
_KEYS = {f.name.replace("_", "-"): f.name for f in fields(Config) if f.name not in _ORIGIN}
#: The table omni-port reads, as a header line writes it.
TABLE = "[tool.omni-port]"
#: Keys with a closed set of values, and those values.
_CHOICES = {
    "history": ("auto", "none"),
    "downloads": ("members", "whole"),
    "platform": tuple(PLATFORMS),
}
#: Keys that may not be empty: each names something every run needs.
_REQUIRED = ("source", "upstream", "patches", "generated", "upstream-class", "v2-generated")
#: Keys of earlier releases, and what to write instead: read as unknown keys, they would
#: leave a maintainer guessing; ignored, they would change what passes without a word.
_RETIRED = {
    "lenient": (
        "`lenient` is no longer a key: it accepted every malformed marker of every source. "
        'Name the reviewed ones instead: marker-allow = "marker-allow.txt", a file of '
        "'FILE:LINE: CODE  reason' lines (`omni-port upgrade --lenient` writes both); with "
        "none to accept, delete this line"
    ),
}


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a ``[tool.omni-port]`` table, from ``start`` upwards.

    Raises BadInput (OP005) for one that mentions omni-port but is not valid TOML: a
    configuration that cannot be read is an error, never a silent fall back to defaults.
    """
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if not candidate.is_file():
            continue
        text = _read(candidate)
        if "omni-port" in text and "omni-port" in _tool_table(candidate, text):
            return candidate
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not valid UTF-8"
        raise BadInput.at(
            Code.OP005, str(path), 1, f"cannot read configuration: {reason}"
        ) from None


_TOML_WHERE = re.compile(r"\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def _tool_table(path: Path, text: str) -> dict[str, Any]:
    """The ``[tool]`` table; BadInput (OP005) at the line and column of a TOML error."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = _TOML_WHERE.search(message)
        line, col = (int(where["line"]), int(where["col"])) if where else (1, 1)
        reason = message[: where.start()] if where else message
        raise BadInput.at(Code.OP005, str(path), line, f"not valid TOML: {reason}", col) from None
    tool = data.get("tool", {})
    return tool if isinstance(tool, dict) else {}


def load(path: Path | None) -> Config:
    """Configuration from ``path`` (or the nearest pyproject.toml), else the defaults.

    Raises BadInput (OP005, at the line of the culprit) for a file that cannot be read, is
    not TOML, has no ``[tool.omni-port]`` table (when given explicitly), or holds an unknown
    key or an invalid value.
    """
    if path is None:
        path = find_pyproject(Path.cwd())
        if path is None:
            return Config()
    return loads(path, _read(path))


def loads(path: Path, text: str) -> Config:
    """The configuration ``text`` holds, as if read from ``path`` (relative paths start at
    its folder): ``load`` of a file not written yet. Raises BadInput as ``load`` does."""
    tool = _tool_table(path, text)
    if "omni-port" not in tool:
        raise BadInput.at(Code.OP005, str(path), 1, f"no {TABLE} table in this file")
    table = tool["omni-port"]
    if not isinstance(table, dict):
        raise BadInput.at(Code.OP005, str(path), _line_of(text, ""), f"{TABLE} must be a table")
    values: dict[str, Any] = {"root": str(path.parent), "file": str(path)}
    for key, value in table.items():
        checked = _checked(path, text, str(key), value)
        values[_KEYS[key]] = checked
        specs = checked.split() if key == "v2-vllm" and isinstance(checked, str) else [checked]
        for spec in specs if _KEYS[key] in (*_SPEC_KEYS, "v2_vllm") else []:
            if isinstance(spec, str) and spec:
                _check_spec(path, text, str(key), spec)
    # A key the table leaves out takes its platform's default.
    platform = PLATFORMS[values.get("platform", "npu")]
    values = {**platform.defaults(), **values}
    for key in _SPEC_KEYS:
        if key in values:
            values[key] = _relative_spec(values[key], path.parent)
    if "v2_vllm" in values:
        values["v2_vllm"] = " ".join(
            _relative_spec(v, path.parent) for v in values["v2_vllm"].split()
        )
    return replace(Config(), **values)


def _checked(path: Path, text: str, key: str, value: object) -> str:
    """A key's value when the key is known and the value valid; else BadInput at its line."""
    line = _line_of(text, key)
    if key in _RETIRED:
        raise BadInput.at(Code.OP005, str(path), line, _RETIRED[key])
    if key not in _KEYS:
        known = ", ".join(sorted(_KEYS))
        message = f"unknown key {key!r} in {TABLE} (known: {known})"
        raise BadInput.at(Code.OP005, str(path), line, message)
    if not isinstance(value, str):
        raise BadInput.at(Code.OP005, str(path), line, f"{TABLE} {key} must be a string")
    choices = _CHOICES.get(key)
    if choices is not None and value not in choices:
        allowed = " or ".join(repr(c) for c in choices)
        message = f"{TABLE} {key} is {value!r}; it must be {allowed}"
        raise BadInput.at(Code.OP005, str(path), line, message)
    if key in _REQUIRED and not value.strip():
        raise BadInput.at(Code.OP005, str(path), line, f"{TABLE} {key} must not be empty")
    if key == "upstream-class" and not value.isidentifier():
        message = f"{TABLE} {key} is {value!r}; it must be a class name"
        raise BadInput.at(Code.OP005, str(path), line, message)
    return value


_HEADER = re.compile(r"^\s*\[(?P<name>[^\[\]]*)\]\s*(#.*)?$")


def _line_of(text: str, key: str) -> int:
    """The line of ``key`` in the ``[tool.omni-port]`` table (of the table's header when
    ``key`` is "" or not found there, 1 when there is no such header)."""
    header = 0
    inside = False
    assignment = re.compile(
        rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*="""
    )
    for number, line in enumerate(text.split("\n"), start=1):
        found = _HEADER.match(line)
        if found is not None:
            inside = found["name"].replace(" ", "") in ("tool.omni-port", 'tool."omni-port"')
            header = number if inside and not header else header
        elif inside and key and assignment.match(line):
            return number
    return header or 1


#: Keys whose value is a source spec: a release, ``installed``, or a path.
_SPEC_KEYS = ("source", "base", "upstream", "v2_source", "v2_upstream", "v2_vllm_base")


def _check_spec(path: Path, text: str, key: str, value: str) -> None:
    """BadInput (OP005, at the key's line) for a release pin that is none
    (``vllm-ascend===0.30.0``, ``vllm-ascend>=0.26``, ``vllm-ascend==notaversion``) and no
    path beside the configuration either. Read as a path, it would fail later as "no such
    file", with no line of this file to fix."""
    from omni_port.sources.upstream import not_a_pin

    wrong = not_a_pin(value)
    if wrong is None or _beside(path.parent, value).exists():
        return
    raise BadInput.at(Code.OP005, str(path), _line_of(text, key), f"{TABLE} {key}: {wrong}")


def _beside(root: Path, value: str) -> Path:
    """``value`` read as a path relative to the configuration's folder ``root``."""
    return Path(value) if Path(value).is_absolute() else root / value


def _is_path_spec(text: str) -> bool:
    from omni_port.sources.upstream import SpecKind, parse_spec

    if not text or text.endswith(INSTALLED_SUFFIX):
        return False
    return parse_spec(text, "").kind is SpecKind.PATH


def _git_spec(text: str) -> tuple[str, str] | None:
    """(path, rev) of a ``PATH@REV`` spec, else None."""
    from omni_port.sources.upstream import SpecKind, parse_spec

    if not text or text.endswith(INSTALLED_SUFFIX):
        return None
    spec = parse_spec(text, "")
    return (spec.path, spec.rev) if spec.kind is SpecKind.GIT else None


def _relative_spec(value: str, root: Path) -> str:
    """A path spec made relative to the configuration file, shown from the working directory
    (for ``PATH@REV``, its path)."""
    if Path(value).is_absolute():
        return value
    # A file beside the configuration is a path whatever its name looks like, as
    # ``parse_spec`` reads a file that exists (`vllm-ascend>=0.26/`, run from below it).
    if value != "installed" and _beside(root, value).exists():
        return os.path.relpath(root / value)
    git = _git_spec(value)
    if git is not None and not Path(git[0]).is_absolute():
        return f"{os.path.relpath(root / git[0])}@{git[1]}"
    return os.path.relpath(root / value) if _is_path_spec(value) else value


def with_platform(config: Config, name: str) -> Config:
    """``config`` on the platform ``name`` (a ``--platform`` flag): each key left at its
    old platform's default takes the new platform's (a vllm-ascend upstream means nothing
    to the GPU runners); a key the configuration set to something else stays."""
    old, new = config.platform_info.defaults(), PLATFORMS[name].defaults()
    moved = {key: new[key] for key, value in old.items() if getattr(config, key) == value}
    return replace(config, platform=name, **moved)


# --- pinning: a command that moves the workspace records where it moved it ---------------


def pinned(text: str, values: Mapping[str, str | bool]) -> str:
    """``text`` (a pyproject.toml) with ``values`` (keys as the table spells them) set in
    its ``[tool.omni-port]`` table, which is added when missing. Every other byte is kept:
    comments, layout, the order of keys, the other tables (as poetry and uv edit it).

    Raises BadInput (OP005) for a key the table does not have or text that is not TOML.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    unknown = [key for key in values if key not in _KEYS]
    if unknown:
        raise BadInput.at(Code.OP005, "pyproject.toml", 0, f"unknown key {unknown[0]!r}")
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise BadInput.at(Code.OP005, "pyproject.toml", 1, f"not valid TOML: {exc}") from None
    tool = document.get("tool")
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        document["tool"] = tool
    table = tool.get("omni-port")
    if table is None:
        table = tomlkit.table()
        tool["omni-port"] = table
    for key, value in values.items():
        if table.get(key) != value:
            table[key] = value
    return tomlkit.dumps(document)


def key_line(config: Config, key: str) -> int:
    """The line of ``key`` in the configuration file (of its table's header when the key
    is not set there); 0 without a file or when it cannot be read."""
    try:
        text = Path(config.file).read_text(encoding="utf-8") if config.file else ""
    except (OSError, UnicodeDecodeError):
        return 0
    return _line_of(text, key) if text else 0


def config_file(config: Config) -> Path:
    """The file a configuration was read from; ``pyproject.toml`` here without one."""
    return Path(config.file) if config.file else Path("pyproject.toml")


# --- without a configuration ----------------------------------------------------------------

#: What a run without a configuration lacks.
NO_TABLE = f"no pyproject.toml here or above has a {TABLE} table"


def built_in_defaults() -> str:
    """The defaults a run without a configuration takes, as the table would spell them:
    releases and folders, inputs a maintainer chooses, never taken silently."""
    default = Config()
    keys = ("source", "upstream", "patches", "generated")
    return ", ".join(f'{key} = "{getattr(default, key)}"' for key in keys)
