"""Tests for :mod:`govern.ci.github` against a fake GitHub on 127.0.0.1 (tests/fakes/github.py).

What every hosted provider does (tokens, rate limits, outages, cancelling, evidence,
from_config's shared keys) is tested for GitHub too in test_http.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from packaging.version import Version

from fakes.api import Reply
from fakes.ci import NOW, Ending, GitHubVendor
from fakes.ci import TRIAL as KIT_TRIAL
from fakes.github import JobPlan, RunPlan, github_log, message
from fakes.sleeps import Sleeps, run
from govern.ci.base import Conclusion, RunRef, RunStatus, Trial
from govern.ci.github import (
    CheckRunInfo,
    GitHubActions,
    correlation_pattern,
    summarize_check_runs,
)
from govern.ci.github_checks import GitHubChecks
from govern.ci.github_dispatch import GitHubDispatch
from govern.ci.providers import github_from_config
from govern.errors import CIError, CIRateLimited, CIUnavailable, ConfigError

TOKEN = GitHubVendor.token
TRIAL = replace(KIT_TRIAL, profile="linux-cuda13", correlation_id="govern-7-1")
MARKER_LOG = github_log(
    "Run pip install -c constraints.txt cupy-cuda13x==14.1.1",
    "Successfully installed cupy-cuda13x-14.1.1 fastrlock-0.8.3",
    "govern-verify: installed cupy-cuda13x==14.1.1",
    "===== 12 passed in 3.02s =====",
)
DISPATCHES = "actions/workflows/verify.yml/dispatches"
RUNS = "actions/workflows/verify.yml/runs"


@pytest.fixture
def gh() -> Iterator[GitHubVendor]:
    """A started fake GitHub; stopped (threads joined) after the test."""
    with GitHubVendor().serving() as vendor:
        yield vendor


def status_of(gh: GitHubVendor, run_id: int, **options: Any) -> RunStatus:
    """The provider's status of one run."""
    return gh.using(lambda p: p.status(TRIAL, RunRef(str(run_id))), **options)


# -- dispatch -------------------------------------------------------------------------------


def test_dispatch_sends_the_documented_request_and_takes_the_run_from_its_answer(
    gh: GitHubVendor,
) -> None:
    fake = gh.fake
    started = gh.using(lambda p: p.start(TRIAL))

    [dispatch] = fake.sent("POST", fake.repo_path(DISPATCHES))
    assert dispatch.headers["authorization"] == f"Bearer {TOKEN}"
    assert dispatch.headers["accept"] == "application/vnd.github+json"
    assert dispatch.headers["x-github-api-version"] == "2022-11-28"
    assert dispatch.json() == {
        "ref": "main",
        "inputs": {
            "package": "cupy-cuda13x",
            "version": "14.1.1",
            "requirement": "cupy-cuda13x==14.1.1",
            "profile": "linux-cuda13",
            "correlation_id": "govern-7-1",
        },
        "return_run_details": True,
    }
    [run_id] = fake.run_ids()
    assert started.run == RunRef(
        str(run_id), url=f"{fake.url}/{fake.repository}/actions/runs/{run_id}"
    )
    assert not started.status.done
    # The answer named the run: no listing was needed.
    assert not fake.sent("GET", fake.repo_path(RUNS))


def test_dispatch_by_numeric_workflow_id_on_another_branch() -> None:
    with GitHubVendor(branches=("main", "verify")).serving() as gh:
        fake = gh.fake
        gh.using(lambda p: p.start(TRIAL), workflow=fake.workflow_id, ref="verify")
        path = fake.repo_path(f"actions/workflows/{fake.workflow_id}/dispatches")
        [dispatch] = fake.sent("POST", path)
        assert dispatch.json()["ref"] == "verify"


def test_an_older_server_is_asked_again_and_the_run_found_by_its_correlation_id() -> None:
    with GitHubVendor(supports_run_details=False).serving() as gh:
        fake = gh.fake
        # Decoys: another trial, a push run and an older run that carry our id.
        fake.add_run("govern verify govern-8-1")
        fake.add_run("govern verify govern-7-1", event="push")
        fake.add_run("govern verify govern-7-1", created_at=datetime(2020, 1, 1, tzinfo=UTC))

        class Meanwhile(Sleeps):
            async def __call__(self, delay: float) -> None:
                await super().__call__(delay)
                if len(self.delays) == 1:  # a newer run whose id only starts like ours
                    fake.add_run("govern verify govern-7-10")

        sleeps = Meanwhile()

        async def body(provider: GitHubActions) -> RunRef:
            started = await provider.start(TRIAL)
            await provider.start(Trial("cupy-cuda13x", Version("14.1.1"), "p", "govern-7-2"))
            return started.run

        run = gh.using(body, sleeps=sleeps)

        first, second, third = [r.json() for r in fake.sent("POST", fake.repo_path(DISPATCHES))]
        assert first["return_run_details"] is True
        assert "return_run_details" not in second  # asked again without it
        assert "return_run_details" not in third  # and not asked any more
        mine = [
            i for i in fake.run_ids() if fake.inputs_of(i).get("correlation_id") == "govern-7-1"
        ]
        assert [run.run_id] == [str(i) for i in mine]  # the 422 started no run
        assert run.url == f"{fake.url}/{fake.repository}/actions/runs/{mine[0]}"
        listing = fake.sent("GET", fake.repo_path(RUNS))[0]
        assert listing.query["event"] == ["workflow_dispatch"]
        assert listing.query["branch"] == ["main"]
        assert listing.query["created"][0].startswith(">=")
        assert sleeps.delays[0] == 1.0


def test_a_run_listed_late_is_found_after_waiting() -> None:
    with GitHubVendor(supports_run_details=False).serving() as gh:
        gh.fake.list_lag = 2
        sleeps = Sleeps()
        started = gh.using(lambda p: p.start(TRIAL), sleeps=sleeps)
        [run_id] = gh.fake.run_ids()
        assert started.run.run_id == str(run_id)
        assert sleeps.delays == [1.0, 2.0, 3.0]
        assert len(gh.fake.sent("GET", gh.fake.repo_path(RUNS))) == 3


def test_a_run_not_listed_yet_is_resolved_by_status() -> None:
    with GitHubVendor(supports_run_details=False).serving() as gh:
        fake = gh.fake
        fake.list_lag = 1000
        fake.plan = RunPlan(jobs=(JobPlan(log=MARKER_LOG),))
        started = gh.using(lambda p: p.start(TRIAL))
        assert started.run.run_id == "dispatch:govern-7-1"

        waiting = gh.using(lambda p: p.status(TRIAL, started.run))
        assert waiting.conclusion is None
        assert "govern-7-1" in waiting.detail

        fake.reveal_all()
        fake.add_run("govern verify govern-7-10")  # must not be taken for ours
        status = gh.using(lambda p: p.status(TRIAL, started.run))
        [ours, _] = fake.run_ids()
        assert status.conclusion is Conclusion.PASSED
        assert status.url == f"{fake.url}/{fake.repository}/actions/runs/{ours}"
        assert status.run_id == str(ours)  # the store keeps it: webhooks then match the run
        known = gh.using(lambda p: p.status(TRIAL, RunRef(str(ours))))
        assert known.run_id is None  # nothing new to learn


def test_correlation_ids_match_as_whole_words() -> None:
    pattern = correlation_pattern("govern-7-1")
    assert pattern.search("govern verify govern-7-1")
    assert pattern.search("verify (govern-7-1) on linux")
    assert not pattern.search("govern verify govern-7-10")
    assert not pattern.search("govern verify xgovern-7-1")
    assert not pattern.search("govern verify govern-7-1.2")


def test_a_dispatch_the_server_rejects_is_an_error_with_its_message() -> None:
    # A workflow that declares no reproducer input refuses a trial that has one.
    declared = ("package", "version", "requirement", "profile", "correlation_id")
    with GitHubVendor(inputs=declared).serving() as gh:
        trial = Trial("cupy-cuda13x", Version("14.1.1"), "p", "govern-9-1", reproducer="x")
        with pytest.raises(CIError, match="Unexpected inputs provided") as caught:
            gh.using(lambda p: p.start(trial))
        assert type(caught.value) is CIError
        assert caught.value.status == 422
        assert not gh.fake.run_ids()
        assert caught.value.tip is not None
        assert "correlation_id, package, profile, reproducer, requirement, version" in (
            caught.value.tip
        )


def test_a_trial_s_lock_pins_are_a_dispatch_input() -> None:
    """Issue 25: the run installs the candidate with the lock's other versions, given as
    the ``pins`` input (a constraints file's text); a workflow without it says so."""
    pins = ("fastrlock==0.8.3", "numpy==2.2.6")
    trial = Trial("cupy-cuda13x", Version("14.1.1"), "p", "govern-9-1", pins=pins)
    with GitHubVendor().serving() as gh:
        started = gh.using(lambda p: p.start(trial))
        (run_id,) = gh.fake.run_ids()
        assert started.run.run_id == str(run_id)
        assert gh.fake.inputs_of(run_id)["pins"] == "fastrlock==0.8.3\nnumpy==2.2.6"
    declared = ("package", "version", "requirement", "profile", "correlation_id")
    with GitHubVendor(inputs=declared).serving() as gh:
        with pytest.raises(CIError, match="Unexpected inputs provided") as caught:
            gh.using(lambda p: p.start(trial))
        assert caught.value.tip is not None
        assert "pins" in caught.value.tip


# -- status ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conclusion", "log", "ending"),
    [
        ("timed_out", MARKER_LOG, Ending(Conclusion.TIMED_OUT, None, "timed the run out")),
        ("startup_failure", "", Ending(Conclusion.ERRORED, None, "startup_failure")),
        ("action_required", "", Ending(Conclusion.ERRORED, None, "action_required")),
        ("neutral", MARKER_LOG, Ending(Conclusion.ERRORED, None, "neutral")),
        ("stale", "", Ending(Conclusion.ERRORED, None, "stale")),
        ("something_new", "", Ending(Conclusion.ERRORED, None, "something_new")),
    ],
)
def test_conclusions_that_are_no_verdict_map_to_govern_conclusions(
    gh: GitHubVendor, conclusion: str, log: str, ending: Ending
) -> None:
    job = JobPlan(conclusion=conclusion if conclusion in ("success", "failure") else None, log=log)
    run_id = gh.fake.add_run("t", RunPlan(states=(("completed", conclusion),), jobs=(job,)))

    ending.check(status_of(gh, run_id))


def test_only_verdicts_read_logs(gh: GitHubVendor) -> None:
    run_id = gh.fake.add_run("t", RunPlan(states=(("completed", "cancelled"),)))
    status_of(gh, run_id)
    assert not gh.fake.sent("GET", gh.fake.repo_path(f"actions/runs/{run_id}/jobs"))
    assert not gh.fake.blob_requests


def test_evidence_is_read_from_every_job_but_skipped_ones(gh: GitHubVendor) -> None:
    plan = RunPlan(
        jobs=(
            JobPlan(name="lint", log=github_log("ruff: all checks passed")),
            JobPlan(name="docs", conclusion="skipped", log="never read"),
            JobPlan(name="verify (linux-cuda13)", log=MARKER_LOG),
        )
    )
    run_id = gh.fake.add_run("t", plan)
    status = status_of(gh, run_id)
    assert status.conclusion is Conclusion.PASSED
    assert len(gh.fake.blob_requests) == 2
    assert status.log_excerpt is not None
    assert "never read" not in status.log_excerpt
    assert status.log_excerpt.index("ruff") < status.log_excerpt.index("govern-verify")


def test_the_log_download_never_carries_the_token(gh: GitHubVendor) -> None:
    fake = gh.fake
    run_id = fake.add_run("t", RunPlan(jobs=(JobPlan(log=MARKER_LOG),)))
    status = status_of(gh, run_id)
    assert status.conclusion is Conclusion.PASSED
    [redirect] = fake.sent(path="/logs")
    assert redirect.headers["authorization"] == f"Bearer {TOKEN}"
    [download] = fake.blob_requests
    assert fake.blob_url != fake.url  # another origin, as GitHub's log host is
    assert "authorization" not in download.headers
    assert all(TOKEN not in value for value in download.headers.values())
    assert TOKEN not in str(download.query)


def test_an_unknown_status_is_taken_as_running(gh: GitHubVendor) -> None:
    run_id = gh.fake.add_run("t", RunPlan(states=(("warming_up", None),)))
    status = status_of(gh, run_id)
    assert status.conclusion is None
    assert "warming_up" in status.detail


def test_a_cancel_of_check_runs_sends_nothing(gh: GitHubVendor) -> None:
    gh.using(lambda p: p.cancel(RunRef("checks:renovate/x")))  # govern did not start them

    assert not gh.fake.sent()


# -- errors, rate limits, tokens ------------------------------------------------------------


def test_a_secondary_rate_limit_with_retry_after_is_slept_through(gh: GitHubVendor) -> None:
    run_id = gh.fake.add_run("t", RunPlan(jobs=(JobPlan(log=MARKER_LOG),)))
    path = gh.fake.repo_path(f"actions/runs/{run_id}")
    limited = message(429, "You have exceeded a secondary rate limit.", **{"retry-after": "2"})
    gh.fake.fail(limited, method="GET", path=path)
    sleeps = Sleeps()
    status = status_of(gh, run_id, sleeps=sleeps)
    assert status.conclusion is Conclusion.PASSED
    assert sleeps.delays == [2.0]
    assert len(gh.fake.sent("GET", path)) == 2


def test_a_dispatch_waits_out_a_secondary_rate_limit_and_is_sent_again(gh: GitHubVendor) -> None:
    """GitHub's advice for a secondary limit with retry-after: wait that long, send again.
    The limit refused the dispatch (no run started), so sending it twice starts one run."""
    fake = gh.fake
    limited = message(403, "You have exceeded a secondary rate limit.", **{"retry-after": "1"})
    fake.fail(limited, method="POST", path=fake.repo_path(DISPATCHES))
    sleeps = Sleeps()

    started = gh.using(lambda p: p.start(TRIAL), sleeps=sleeps)

    assert sleeps.delays == [1.0]
    assert len(fake.sent("POST", fake.repo_path(DISPATCHES))) == 2
    [run_id] = fake.run_ids()
    assert started.run.run_id == str(run_id)


def test_a_secondary_rate_limit_without_headers_waits_at_least_a_minute(gh: GitHubVendor) -> None:
    """As the forge: GitHub's client, not a 403 taken for a token without permission."""
    fake = gh.fake
    limited = message(403, "You have exceeded a secondary rate limit. Please wait.")
    fake.fail(limited, method="POST", path=fake.repo_path(DISPATCHES))

    with pytest.raises(CIRateLimited) as caught:
        gh.using(lambda p: p.start(TRIAL))

    assert caught.value.until is not None
    assert (caught.value.until - NOW).total_seconds() >= 60
    assert len(fake.sent("POST")) == 1
    assert fake.run_ids() == []


def test_an_apps_installation_token_is_sent_instead_of_the_token(gh: GitHubVendor) -> None:
    """The forge's GitHub App tokens work for GitHub Actions too (the same client)."""

    class Tokens:
        def __init__(self) -> None:
            self.handed = 0

        async def token(self) -> str:
            self.handed += 1
            return TOKEN  # the fake accepts one token: the App's installation token

    tokens = Tokens()
    started = gh.using(lambda p: p.start(TRIAL), token="ghp_STARTUP_UNUSED_000", app=tokens)

    assert tokens.handed >= 1
    [dispatch] = gh.fake.sent("POST", gh.fake.repo_path(DISPATCHES))
    assert dispatch.headers["authorization"] == f"Bearer {TOKEN}"
    assert started.run.run_id in {str(run_id) for run_id in gh.fake.run_ids()}


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (Reply(200, b'{"id": 1, "conclusion": null}'), "status is not a str"),
        (Reply(200, b"[]"), "the workflow run is not a dict"),
    ],
)
def test_an_answer_that_is_not_the_expected_json_is_unavailable(
    gh: GitHubVendor, reply: Reply, match: str
) -> None:
    run_id = gh.fake.add_run("t")
    gh.fake.fail(reply, method="GET", path=gh.fake.repo_path(f"actions/runs/{run_id}"))
    with pytest.raises(CIUnavailable, match=match):
        status_of(gh, run_id)


def test_a_repository_the_token_cannot_see_is_an_error(gh: GitHubVendor) -> None:
    with pytest.raises(CIError, match="HTTP 404: Not Found") as caught:
        gh.using(lambda p: p.start(TRIAL), repository="octo-org/private")
    assert caught.value.status == 404


def test_the_token_never_leaks(gh: GitHubVendor, caplog: pytest.LogCaptureFixture) -> None:
    fake = gh.fake
    leaky = github_log(f"echo {TOKEN}", "govern-verify: installed cupy-cuda13x==14.1.1")
    run_id = fake.add_run("t", RunPlan(jobs=(JobPlan(log=leaky),)))
    fake.fail(message(422, f"Invalid token {TOKEN} in request"), path=fake.repo_path(DISPATCHES))
    fake.fail(message(403, f"no {TOKEN}"), method="GET", path=fake.repo_path("actions/runs/1"))
    seen: list[str] = []

    async def body(provider: GitHubActions) -> RunStatus:
        seen.append(repr(provider))
        for attempt in (provider.start(TRIAL), provider.status(TRIAL, RunRef("1"))):
            try:
                await attempt
            except CIError as exc:
                seen.extend([str(exc), repr(exc), exc.tip or ""])
        await provider.cancel(RunRef("1"))
        return await provider.status(TRIAL, RunRef(str(run_id)))

    with caplog.at_level(logging.DEBUG):
        status = gh.using(body)
    assert len(seen) == 7  # both failures were seen
    assert status.log_excerpt is not None
    assert "echo ***" in status.log_excerpt
    assert status.conclusion is Conclusion.PASSED
    for text in [*seen, caplog.text, repr(status), status.detail]:
        assert TOKEN not in text


# -- check runs -----------------------------------------------------------------------------


def test_check_runs_of_a_pull_request_ref(gh: GitHubVendor) -> None:
    fake = gh.fake
    ref = "refs/pull/12/head"
    job = fake.add_check_run(ref, "verify (linux-cuda13)", log=MARKER_LOG)
    other = fake.add_check_run(ref, "codecov/patch", "completed", "neutral", app="codecov")
    checks = gh.using(lambda p: p.check_runs(ref))
    assert checks == [
        CheckRunInfo(
            job,
            "verify (linux-cuda13)",
            "completed",
            "success",
            f"{fake.url}/{fake.repository}/runs/{job}",
            "github-actions",
        ),
        CheckRunInfo(
            other,
            "codecov/patch",
            "completed",
            "neutral",
            f"{fake.url}/{fake.repository}/runs/{other}",
            "codecov",
        ),
    ]
    [call] = fake.sent("GET", fake.repo_path(f"commits/{ref}/check-runs"))
    assert call.headers["authorization"] == f"Bearer {TOKEN}"


def test_checks_mode_reads_the_templated_ref_and_needs_evidence(gh: GitHubVendor) -> None:
    ref = "renovate/cupy-cuda13x-14.1.1"
    gh.fake.add_check_run(ref, "verify", log=MARKER_LOG)
    gh.fake.add_check_run(ref, "external-ci", "completed", "success", app="buildkite")

    async def body(provider: GitHubActions) -> tuple[RunRef, RunStatus]:
        started = await provider.start(TRIAL)
        return started.run, await provider.status(TRIAL, started.run)

    run, status = gh.using(body, mode="checks", ref="renovate/{package}-{version}")
    assert run.run_id == f"checks:{ref}"
    assert status.conclusion is Conclusion.PASSED
    assert status.installed == "14.1.1"
    assert len(gh.fake.blob_requests) == 1  # only the Actions job's log is read
    assert not gh.fake.sent("POST", gh.fake.repo_path(DISPATCHES))


def test_checks_mode_names_a_log_that_cannot_be_read(gh: GitHubVendor) -> None:
    ref = "renovate/cupy-cuda13x-14.1.1"
    job = gh.fake.add_check_run(ref, "verify", log=MARKER_LOG)
    gh.fake.fail(message(410, "Gone"), path=gh.fake.repo_path(f"actions/jobs/{job}/logs"))

    status = gh.using(
        lambda p: p.status(TRIAL, RunRef(f"checks:{ref}")),
        mode="checks",
        ref="renovate/{package}-{version}",
    )

    assert status.conclusion is Conclusion.ERRORED
    assert "the log of job verify could not be read" in status.detail


def test_checks_mode_without_check_runs_is_still_running(gh: GitHubVendor) -> None:
    status = gh.using(
        lambda p: p.status(TRIAL, RunRef("checks:renovate/none")),
        mode="checks",
        ref="renovate/{package}-{version}",
    )
    assert status.conclusion is None
    assert "no check runs" in status.detail


def _check(
    name: str, status: str = "completed", conclusion: str | None = "success"
) -> CheckRunInfo:
    return CheckRunInfo(len(name), name, status, conclusion, None, "github-actions")


@pytest.mark.parametrize(
    ("checks", "log", "expected"),
    [
        ([], MARKER_LOG, None),
        ([_check("a"), _check("b", "in_progress", None)], MARKER_LOG, None),
        ([_check("a"), _check("b", conclusion="skipped")], MARKER_LOG, Conclusion.PASSED),
        ([_check("a"), _check("b", conclusion="neutral")], MARKER_LOG, Conclusion.PASSED),
        ([_check("a")], github_log("all good"), Conclusion.ERRORED),
        ([_check("a"), _check("b", conclusion="failure")], MARKER_LOG, Conclusion.FAILED),
        (
            [_check("a", conclusion="failure"), _check("b", conclusion="cancelled")],
            MARKER_LOG,
            Conclusion.FAILED,
        ),
        ([_check("a"), _check("b", conclusion="cancelled")], MARKER_LOG, Conclusion.CANCELLED),
        ([_check("a"), _check("b", conclusion="timed_out")], MARKER_LOG, Conclusion.TIMED_OUT),
        ([_check("a", conclusion="action_required")], MARKER_LOG, Conclusion.ERRORED),
        ([_check("a", conclusion="startup_failure")], MARKER_LOG, Conclusion.ERRORED),
    ],
)
def test_check_runs_summarise_to_a_status(
    checks: list[CheckRunInfo], log: str, expected: Conclusion | None
) -> None:
    status = summarize_check_runs(checks, TRIAL, log)
    assert status.conclusion is expected
    if expected in (Conclusion.PASSED, Conclusion.FAILED):
        assert status.installed == "14.1.1"


# -- configuration --------------------------------------------------------------------------


def test_from_config_with_defaults() -> None:
    provider = GitHubVendor().configured(
        {"provider": "github-actions", "repository": "octo-org/lab", "workflow": "verify.yml"}
    )
    assert provider.kind == "github-actions"
    assert (provider.repository, provider.workflow, provider.ref) == (
        "octo-org/lab",
        "verify.yml",
        "main",
    )
    assert provider.api_url == "https://api.github.com"
    assert provider.timeout == 3600.0
    assert isinstance(provider, GitHubDispatch)
    assert provider.mode == "dispatch"
    assert TOKEN not in repr(provider)
    assert TOKEN not in repr(vars(provider))


def test_from_config_with_every_key(gh: GitHubVendor) -> None:
    fake = gh.fake
    options = {
        "provider": "github-actions",
        "repository": fake.repository,
        "workflow": 161335,
        "ref": "main",
        "token-env": "VERIFY_TOKEN",
        "api-url": fake.url,
        "timeout": 900,
        "mode": "dispatch",
    }

    async def main() -> RunRef:
        async with httpx.AsyncClient() as http:
            provider = github_from_config(
                "gha", options, http=http, environ={"VERIFY_TOKEN": TOKEN}
            )
            assert provider.timeout == 900.0
            return (await provider.start(TRIAL)).run

    started = run(main())
    assert started.run_id == str(fake.run_ids()[0])
    [dispatch] = fake.sent("POST", fake.repo_path("actions/workflows/161335/dispatches"))
    assert dispatch.headers["authorization"] == f"Bearer {TOKEN}"


def test_from_config_checks_mode() -> None:
    provider = GitHubVendor().configured(
        {"repository": "octo-org/lab", "mode": "checks", "ref": "renovate/{package}-{version}"}
    )
    assert isinstance(provider, GitHubChecks)
    assert provider.mode == "checks"
    assert provider.checks_ref(TRIAL) == "renovate/cupy-cuda13x-14.1.1"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"tokn-env": "X"}, "unknown key(s) tokn-env"),
        ({"repository": 12}, "repository must be a string, not a number"),
        ({"repository": "octo-org"}, "repository must be owner/name"),
        ({"repository": None}, "repository is required"),
        ({"workflow": None}, "workflow is required"),
        ({"workflow": True}, "workflow must be a workflow file name"),
        ({"workflow": "../../x"}, "workflow must be a workflow file name"),
        ({"ref": ["main"]}, "ref must be a string, not an array"),
        ({"mode": "poll"}, "mode must be one of dispatch, checks"),
        ({"mode": "checks", "ref": "renovate/{package}"}, "must contain {version}"),
        ({"mode": "checks", "ref": "r/{name}-{version}"}, "only use the placeholders"),
        ({"token-env": "ghp_x y"}, "token-env must be the name"),
    ],
)
def test_from_config_refuses_invalid_tables(options: dict[str, Any], match: str) -> None:
    table: dict[str, Any] = {
        "provider": "github-actions",
        "repository": "octo-org/lab",
        "workflow": "verify.yml",
    }
    table.update(options)
    table = {k: v for k, v in table.items() if v is not None}
    with pytest.raises(ConfigError) as caught:
        GitHubVendor().configured(table)
    message = caught.value.message
    assert message.startswith("[tool.govern.ci.gha]")
    assert match in message
    assert "\n" not in message
    assert TOKEN not in message + (caught.value.tip or "")
    assert "ghp_x y" not in message  # a token pasted as its variable's name is not echoed
