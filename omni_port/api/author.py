"""Who records a decision in the patches: git's author identity, else the login name."""

from __future__ import annotations

import getpass
import subprocess


def author() -> str:
    """``Name <email>`` as git would sign a commit here (``GIT_AUTHOR_NAME`` and
    ``GIT_AUTHOR_EMAIL`` or the configured user), else the login name; "" when neither
    can be had."""
    try:
        done = subprocess.run(
            ["git", "var", "GIT_AUTHOR_IDENT"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        done = None
    if done is not None and done.returncode == 0 and done.stdout.strip():
        # "Name <email> 1700000000 +0100": the date is not who.
        return done.stdout.strip().rsplit(" ", 2)[0]
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""
