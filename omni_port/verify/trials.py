"""What verify would newly report of a conflict's candidate taken: the sync's judge.

A sync offers a conflict's candidate only when taking it leaves the runner no worse for
``verify`` (``sync.offers``). The checks asked are those whose outcome where a block
stands decides (``checks.placed_findings``), on the module as written and on the trial;
a problem of the trial's that the output as written does not have already is new. Lines
move between the two, so findings compare by code and message, line numbers left out.
"""

from __future__ import annotations

import re
from collections import Counter

from omni_port.model import Finding, PatchSet, Severity
from omni_port.report import shorten
from omni_port.sync.offers import Trial
from omni_port.sync.splice import Built
from omni_port.verify.checks import Context, overrides_of, placed_findings

#: Line numbers a message names (``lines 679, 724``, ``from line 12``): they move when a
#: block goes in, the problem does not.
_LINES = re.compile(r"\blines? \d+(?:, \d+)*")


class Judge:
    """The first problem verify would report of a trial and not of the output as written
    (``sync.offers.Judge``). One judge serves one sync: the output as written is checked
    once per module."""

    def __init__(self) -> None:
        self._written: dict[int, tuple[Built, Counter[str]]] = {}

    def __call__(self, trial: Trial) -> str:
        before = self._problems_now(trial)
        after = _problems(trial, trial.tried)
        more = Counter(map(_key, after)) - before
        new = [f for f in after if _key(f) in more]
        return f"{new[0].code.value} {shorten(new[0].message, 140)}" if new else ""

    def _problems_now(self, trial: Trial) -> Counter[str]:
        kept = self._written.get(id(trial.now))
        if kept is None or kept[0] is not trial.now:
            kept = (trial.now, Counter(map(_key, _problems(trial, trial.now))))
            self._written[id(trial.now)] = kept
        return kept[1]


def _problems(trial: Trial, built: Built) -> list[Finding]:
    """The errors of ``built`` (one of the trial's two modules) the place-bound checks find."""
    module = trial.module
    context = Context(
        upstream=trial.upstream, unused_in_source={module.name: module.unused_imports}
    )
    overrides = overrides_of(PatchSet((module,)))
    found = placed_findings(module.name, built.text, built.placements, overrides, context)
    return [f for f in found if f.severity is Severity.ERROR]


def _key(finding: Finding) -> str:
    return f"{finding.code.value} {_LINES.sub('lines', finding.message)}"
