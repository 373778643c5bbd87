"""The command line's global options, shared by every command through ``ctx.obj``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from omni_port.api.files import Progress
from omni_port.api.model import Config

if TYPE_CHECKING:
    from omni_port.api import Settings


@dataclass(frozen=True, slots=True)
class Options:
    """Global options, shared by every command through ``ctx.obj``."""

    config: Config
    cache: Path
    quiet: bool

    def progress(self) -> Progress | None:
        if self.quiet:
            return None
        return lambda message: click.echo(f"omni-port: {message}", err=True)

    @property
    def settings(self) -> Settings:
        """What the API's loaders need: configuration, cache and progress."""
        from omni_port.api import Settings  # the API loads with the commands that use it

        return Settings(self.config, self.cache, self.progress())
