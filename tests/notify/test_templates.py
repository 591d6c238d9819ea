"""The reminder's text when there is less to say: no narrow change, no run URL, an owner."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import State
from govern.notify.templates import reminder, reminder_key
from govern.service.propose import body
from govern.store.proposals import Run, Work
from govern.store.views import StoredRelaxation

BASE = Work(
    exclusion_id=1,
    ref=ExclusionRef(
        key="0123456789abcdef",
        repository="octo-org/app",
        source="requirements.txt",
        line=3,
        package="numpy",
        requirement="numpy==1.26.4",
        clause="==1.26.4",
    ),
    root="/srv/app",
    format="requirements",
    state=State.VERIFIED,
    candidate_id=7,
    version="2.0.1",
    relaxation=StoredRelaxation(
        specifier=None,
        requirement=None,
        strategy="exclude",
        note="",
        refused="a pin is relaxed by hand",
    ),
    reason=None,
    links=(),
    bad_versions=(),
    owner="@octo-org/platform",
    runs=(Run("py312", "command", None, None),),
    history=((datetime(2026, 1, 1, tzinfo=UTC), "added", ""),),
)


def work(**changes: Any) -> Work:
    return replace(BASE, **changes)


def test_a_reminder_without_a_narrow_change_says_why() -> None:
    message = reminder(work())
    assert message.key == reminder_key(work()) == "remind:0123456789abcdef:2.0.1"
    assert message.kind == "reminder"
    assert message.subject == "numpy 2.0.1 passed verification: relax numpy==1.26.4"
    assert message.text.splitlines()[:13] == [
        "numpy 2.0.1 passed verification: the exclusion that keeps it out can be relaxed.",
        "",
        "Exclusion: `numpy==1.26.4` in `requirements.txt` line 3 (octo-org/app)",
        "Reason: (none recorded)",
        "Candidate: numpy 2.0.1",
        "Change: none computed (a pin is relaxed by hand)",
        "Owner: @octo-org/platform",
        "",
        "Verification:",
        "- py312 (command): no run URL, installed ?",
        "",
        "Links:",
        "- (none recorded)",
    ]
    assert "**Change:** none computed (a pin is relaxed by hand)" in message.markdown
    assert "**Owner:** @octo-org/platform" in message.markdown
    assert "| py312 | command | - | - |" in message.markdown
    assert message.links == ()


def test_a_relaxation_not_computed_yet_is_said_so() -> None:
    message = reminder(work(relaxation=None, owner=None, runs=()))
    assert "Change: none computed (not computed yet)" in message.text
    assert "Owner:" not in message.text
    assert "- (no run recorded)" in message.text
    assert "| - | - | - | - |" in message.markdown


def test_a_change_request_names_the_other_lines_read_differently() -> None:
    relaxed = StoredRelaxation(
        specifier="!=1.26.4", requirement="numpy!=1.26.4", strategy="exclude", note="n"
    )
    plain = body(work(relaxation=relaxed), old="numpy==1.26.4", new="numpy!=1.26.4", diff="-")
    assert "read differently" not in plain
    told = body(
        work(relaxation=relaxed),
        old="numpy==1.26.4",
        new="numpy!=1.26.4",
        diff="-",
        elsewhere=["`scipy==1.13` (line 4): its reason changes"],
    )
    assert "### Other lines read differently" in told
    assert "- `scipy==1.13` (line 4): its reason changes\n" in told
    assert told.index("### Other lines") > told.index("### Diff")
