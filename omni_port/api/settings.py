"""What every API function that reads inputs needs: configuration, download cache, progress.

Light on purpose: a `check` answered from its cache builds one and loads no stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from omni_port.sources.config import Config
from omni_port.sources.upstream import Progress, default_cache


@dataclass(frozen=True, slots=True)
class Settings:
    """What every stage that reads inputs needs: configuration, download cache, progress."""

    #: ``[tool.omni-port]`` of the host repository (the defaults when there is none).
    config: Config = field(default_factory=Config)
    #: Download cache for releases.
    cache: Path = field(default_factory=default_cache)
    #: Where progress lines go (downloads, the upstream a sync takes); None for silence.
    progress: Progress | None = None
