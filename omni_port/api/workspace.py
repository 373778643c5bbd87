"""`init`: a repository (a vLLM-Omni checkout, or one beside it) made an omni-port workspace.

A maintainer's workspace is their own repository: its ``[tool.omni-port]`` table,
``patches/`` with every resolution, the lock and the generated runners are committed
there, and CI runs ``omni-port check`` on it. ``init`` writes the table and a
``.gitignore`` that keeps what must be committed committed; the first ``upgrade`` fills it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources.config import TABLE, find_pyproject, key_line, loads, pinned
from omni_port.sources.platform import NPU, PLATFORMS

#: Where a workspace keeps what omni-port writes, unless told otherwise: one folder of
#: its own in the repository (a name no Python package can take).
FOLDER = "omni-port"

#: What the workspace folder's ``.gitignore`` says: a repository's own rules (``*.lock``,
#: ``generated/``) must not hide the patches, the lock or the runners, and Python's byte
#: code (the runtime switch imports the runners from there) stays out.
GITIGNORE = """\
# omni-port's workspace: the patches (every resolution), the lock and the generated
# runners are committed; the rules below re-include them should a rule of the repository
# ignore them (`*.lock`, `generated/`). Python's byte code stays out.
!/*/
!*.patch
!*.index
!*.lock
!*.verified
!*.py
!*.md
__pycache__/
*.py[cod]
"""


@dataclass(frozen=True, slots=True)
class InitRequest:
    """What `init` was asked to make."""

    #: The repository to make a workspace of.
    directory: Path
    #: The upstream to port onto (``vllm-ascend==X``, a path, ``PATH@REV``).
    upstream: str
    #: Where the runners come from ("" = the checkout itself, when it is vLLM-Omni's).
    source: str = ""
    #: What the runners were ported from ("" = none yet: ``upgrade --base detect`` pins it).
    base: str = ""
    #: The patches folder, relative to ``directory``.
    patches: str = f"{FOLDER}/patches"
    #: The generated runners' folder, relative to ``directory``.
    generated: str = f"{FOLDER}/generated"
    #: The runners the workspace keeps (``npu``, ``gpu``: ``sources.platform``).
    platform: str = "npu"


@dataclass(frozen=True, slots=True)
class Initialized:
    """What `init` writes (nothing for a repository that already is a workspace)."""

    #: The configuration file (``pyproject.toml`` of the repository).
    config: Path
    #: File -> bytes to write.
    files: dict[Path, bytes]
    #: The keys written into the table, as the table spells them.
    table: dict[str, str]
    #: The line of the existing table, when the repository already is a workspace (0 else).
    existing: int = 0


def init_workspace(request: InitRequest) -> Initialized:
    """The configuration and ``.gitignore`` that make ``request.directory`` a workspace.

    Raises BadInput: OP001 for a directory that does not exist; OP005 when no source is
    given and the directory is no vLLM-Omni checkout, and for a value the configuration
    would refuse (checked as every command checks it, at its line).
    """
    directory = request.directory
    if not directory.is_dir():
        raise BadInput.at(Code.OP001, str(directory), 0, "no such directory")
    config = directory / "pyproject.toml"
    if find_pyproject(directory) == config:
        existing = loads(config, config.read_text(encoding="utf-8"))
        return Initialized(config, {}, {}, existing=key_line(existing, "") or 1)
    old = config.read_text(encoding="utf-8") if config.is_file() else ""
    table = _table(request)
    new = pinned(old, table)
    loads(config, new)  # refused here, before anything is written, as every command would
    files = {config: new.encode("utf-8")}
    folder = _common_folder(request.patches, request.generated)
    if folder is not None:
        files[directory / folder / ".gitignore"] = GITIGNORE.encode()
    return Initialized(config, files, table)


def _table(request: InitRequest) -> dict[str, str]:
    platform = PLATFORMS[request.platform]
    source = request.source or _checkout_source(request.directory, platform.runners)
    # The NPU platform, the default, goes unsaid (as in every workspace made before).
    table = {"platform": request.platform} if platform is not NPU else {}
    table.update({"source": source, "upstream": request.upstream})
    if request.base:
        table["base"] = request.base
    table["patches"] = request.patches
    table["generated"] = request.generated
    return table


def _checkout_source(directory: Path, runners: tuple[str, ...]) -> str:
    """``.`` for a vLLM-Omni checkout (its ``runners`` where vLLM-Omni keeps them)."""
    if any((directory / member).is_file() for member in runners):
        return "."
    where = PurePosixPath(runners[0]).parent
    message = (
        f"not a vLLM-Omni checkout (no {where}/ runner here): give --source, the runners' "
        "folder, file or release (vllm-omni==X)"
    )
    raise BadInput.at(Code.OP005, str(directory), 0, message)


def _common_folder(*paths: str) -> str | None:
    """The folder below the repository root holding all ``paths`` (relative), if any."""
    parts = [PurePosixPath(p).parts for p in paths]
    if any(PurePosixPath(p).is_absolute() or ".." in PurePosixPath(p).parts for p in paths):
        return None
    common = []
    for names in zip(*parts, strict=False):
        if len(set(names)) != 1:
            break
        common.append(names[0])
    shortest = min(len(p) for p in parts)
    if not common or len(common) == shortest:
        return None  # one path holds the other, or none is below a folder of its own
    return "/".join(common)


def ignored(directory: Path, paths: list[str]) -> list[str]:
    """The ``paths`` (relative to ``directory``) git would ignore there; empty outside a
    git repository or without git. Asked of git itself (``check-ignore --no-index``), so
    every rule counts: the repository's, the user's global excludes, ``info/exclude``."""
    try:
        done = subprocess.run(
            ["git", "check-ignore", "--no-index", "--stdin"],
            cwd=directory,
            input="\n".join(paths) + "\n",
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return []
    if done.returncode not in (0, 1):  # 128: not a repository
        return []
    return [line for line in done.stdout.splitlines() if line]


def committed_paths(table: dict[str, str]) -> list[str]:
    """Sample paths of what a workspace commits, to ask git whether it would ignore them."""
    patches, generated = table["patches"], table["generated"]
    return [
        f"{patches}/omni-port.index",
        f"{patches}/npu_model_runner/R.execute_model.block-01.patch",
        f"{generated}/omni-port.lock",
        f"{generated}/omni-port.verified",
        f"{generated}/npu_model_runner.py",
    ]


__all__ = [
    "FOLDER",
    "TABLE",
    "InitRequest",
    "Initialized",
    "committed_paths",
    "ignored",
    "init_workspace",
]
