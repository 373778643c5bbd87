"""bench/provenance.py: the claims it reads from notes and the text it asks git for.
Notes written here; nothing online."""

from __future__ import annotations

import re

from bench.provenance import Claim, claims, needle

REPO = "/clone"


def _row(reason: str) -> dict[str, object]:
    return {"id": "m.R.forward.edit-01", "method": "forward", "reason": reason}


def test_a_note_s_statements_are_claims_of_the_commit_that_brought_them() -> None:
    reason = (
        f"upstream code the runners never had: `pp = get_pp_group()`, which {REPO}@c377e7393301 "
        f"(c377e73933 Perf(PP): support PP (#7136)) brought ({REPO}@ed8e8b77c003 (ed8e8b77c0 "
        f"fix (#10855)) moved it here), and `use = pp.world_size > 1; if use:`, which "
        f"{REPO}@beb54c2ab96d (beb54c2ab9 [BugFix]support PP (#11076)) brought"
    )
    found = list(claims({"blocks": [_row(reason)]}))
    assert [(c.statement, c.noted, c.gone) for c in found] == [
        ("pp = get_pp_group()", "c377e7393301", False),
        ("use = pp.world_size > 1", "beb54c2ab96d", False),
        ("if use", "beb54c2ab96d", False),
    ]


def test_a_change_into_is_a_claim_that_the_commit_took_the_old_text_out() -> None:
    reason = (
        f"an upstream change the runners never had: `self.flush()` is the code of "
        f"{REPO}@a5a04336c3ee (a5a04336c3 x (#9279)), which {REPO}@28d7ed0a0e71 (28d7ed0a0e "
        "y (#9536)) changed into `self.flush(wait=True)`; the new upstream is followed"
    )
    (found,) = claims({"blocks": [_row(reason)]})
    assert found == Claim("m.R.forward.edit-01", "forward", "self.flush()", "28d7ed0a0e71", True)


def test_the_text_asked_for_takes_any_wrapping_and_no_keyword_or_bracket() -> None:
    pattern = needle("if scheduler_output.total_num_scheduled_tokens <= 0 or no")
    wrapped = "if (\n    scheduler_output.total_num_scheduled_tokens <= 0\n    or not tokens\n):"
    assert re.search(pattern, wrapped)
    assert not re.search(needle("pp = get_pp_group()"), "pp_group = get_pp_group()")
