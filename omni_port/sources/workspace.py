"""What ``check`` reads, resolved from flags and configuration before anything is parsed.

Only located files and paths: the command hashes them first and answers from its cache
when nothing changed, so building this record must stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omni_port.sources.upstream import Located


@dataclass(frozen=True, slots=True)
class CheckInputs:
    """Everything ``check`` reads, resolved from flags and configuration."""

    sources: tuple[Located, ...]
    catalog_path: Path | None
    base: str
    patches: Path
    generated: Path
    upstream: str
    gpu: tuple[Located, ...]
    #: vLLM releases the GPU runners' methods may be copied from; the first is the target.
    vllm: tuple[str, ...]
    allow_path: Path | None
    #: Whether the workspace's V2 tree (``v2-source``) is checked too: not when the flags
    #: name other runners or another generated folder (that is not the workspace).
    v2: bool = False
