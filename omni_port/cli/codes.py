"""The `codes` command: every diagnostic code and its meaning."""

from __future__ import annotations

import click

from omni_port.api.model import Code


@click.command("codes")
def codes_command() -> None:
    """List every diagnostic code with what it means."""
    for code in Code:
        click.echo(f"{code.value}  {code.description}")
