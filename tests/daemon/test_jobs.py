"""What the daemon's job lines say: names and versions, "sent" only for what a run sent,
and the chain to the next job; text from outside shown as one bounded line."""

from __future__ import annotations

from govern.daemon.jobs import propose_outcome, verify_outcome
from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import RunState, Via
from govern.service.outcome import Outcome, ProposeResult
from govern.service.verify import VerifyResult


def _ref(package: str = "cupy-cuda13x", requirement: str = "cupy-cuda13x < 14.1.0") -> ExclusionRef:
    return ExclusionRef(
        key="0123456789abcdef",
        repository="vllm",
        source="requirements/kv_connectors.txt",
        line=6,
        package=package,
        requirement=requirement,
        clause="<14.1.0",
    )


def _outcome(**values: object) -> Outcome:
    fields: dict[str, object] = {
        "ref": _ref(),
        "new": "cupy-cuda13x != 14.1.0",
        "via": Via.GIT,
        "branch": "govern/relax/cupy-cuda13x-5f2c1e0a9b",
    }
    fields.update(values)
    return Outcome(**fields)  # type: ignore[arg-type]


def test_a_push_this_run_is_sent_with_the_package_the_change_and_the_branch() -> None:
    outcome = propose_outcome(ProposeResult([_outcome(sent_now=True)]))
    assert outcome.ok
    assert outcome.summary == (
        "1 sent: cupy-cuda13x < 14.1.0 -> != 14.1.0 pushed govern/relax/cupy-cuda13x-5f2c1e0a9b"
    )
    assert outcome.detail["proposals"][0]["sent_now"] is True


def test_a_proposal_read_again_is_never_sent() -> None:
    outcome = propose_outcome(ProposeResult([_outcome(sent_now=False)]))
    assert outcome.summary == "1 already proposed"
    assert propose_outcome(ProposeResult()).summary == "nothing to propose"


def test_a_change_request_is_opened_and_markers_and_extras_are_left_out() -> None:
    ref = _ref(requirement="cupy-cuda13x[all] >=13.0, <14.1.0 ; sys_platform == 'linux'")
    opened = _outcome(
        ref=ref,
        new="cupy-cuda13x[all] >=13.0, !=14.1.0 ; sys_platform == 'linux'",
        via=Via.GITHUB,
        url="https://forge.example/o/r/pull/7",
        sent_now=True,
    )
    summary = propose_outcome(ProposeResult([opened])).summary
    assert summary == (
        "1 sent: cupy-cuda13x >=13.0, <14.1.0 -> >=13.0, !=14.1.0"
        " opened https://forge.example/o/r/pull/7"
    )


def test_outside_text_is_one_bounded_line_and_many_are_counted() -> None:
    hostile = _outcome(url="https://forge.example/" + "x" * 400 + "\n2026 sync ok", sent_now=True)
    many = [hostile] + [_outcome(sent_now=True) for _ in range(6)]
    summary = propose_outcome(ProposeResult(many)).summary
    assert "\n" not in summary
    assert summary.startswith("7 sent: ")
    assert summary.endswith(" and 2 more")
    assert "…" in summary  # the 400 characters were cut
    assert len(summary) < 5 * 170 + 40


def test_a_failure_names_what_failed_and_is_not_ok() -> None:
    failed = _outcome(state=RunState.FAILED, message="the remote refused the push")
    outcome = propose_outcome(ProposeResult([failed]))
    assert not outcome.ok
    assert outcome.summary == "1 failed: cupy-cuda13x <14.1.0"
    assert outcome.then == ()


def test_a_pass_wakes_propose_and_an_error_is_shown_as_one_line() -> None:
    passed = VerifyResult(started=1)
    passed.verdicts["passed"] = 1
    passed.runs.append(
        {
            "package": "cupy-cuda13x",
            "version": "14.1.1",
            "kind": "candidate",
            "ran": "14.1.1",
            "conclusion": "passed",
            "verdict": "passed",
        }
    )
    outcome = verify_outcome(passed)
    assert outcome.then == ("propose",)
    assert "cupy-cuda13x 14.1.1 passed => passed" in outcome.summary
    errored = VerifyResult(errors=["provider said:\nline two\x1b[31m" + "y" * 500])
    shown = verify_outcome(errored)
    assert shown.then == ()
    assert "\n" not in shown.summary
    assert "\x1b" not in shown.summary
    assert len(shown.summary) < 400
