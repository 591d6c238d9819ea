"""Tests for :mod:`govern.ci.gitlab` against a fake GitLab API on 127.0.0.1.

What every hosted provider does (tokens, rate limits, outages, cancelling, evidence,
from_config's shared keys) is tested for GitLab too in test_http.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from fakes.api import json_reply
from fakes.ci import (
    MARKER,
    NOW,
    TRIAL,
    Ending,
    GitLabJob,
    GitLabVendor,
    PipelinePlan,
    gitlab_rate_limited,
    start_and_poll,
)
from fakes.sleeps import run
from govern.ci.base import Conclusion
from govern.ci.gitlab import GitLab, from_config
from govern.errors import CIAuthError, CIError, CIRateLimited, CIUnavailable, ConfigError

TOKEN = GitLabVendor.token
TRIGGER = GitLabVendor.trigger
WRONG = GitLabVendor.wrong
PATH = GitLabVendor.path
ENCODED = "acme%2Ftools%2Fgpu-checks"
#: a provider that starts pipelines with a trigger token and reads them with TOKEN
TRIGGERED: dict[str, Any] = {
    "token": TRIGGER,
    "token_kind": "trigger",
    "token_source": "$GITLAB_TRIGGER_TOKEN",
    "read_token": TOKEN,
    "read_token_source": "$GITLAB_TOKEN",
}


@pytest.fixture
def gl() -> Iterator[GitLabVendor]:
    """A fake GitLab API for project 4242 (acme/tools/gpu-checks)."""
    with GitLabVendor().serving() as vendor:
        yield vendor


def finished(status: str, *jobs: GitLabJob) -> PipelinePlan:
    """A pipeline that runs once, then ends in ``status`` with ``jobs``."""
    return PipelinePlan(statuses=("running", status), jobs=jobs)


# -- start ----------------------------------------------------------------------------------


def test_start_creates_a_pipeline_that_carries_the_trial(gl: GitLabVendor) -> None:
    started = gl.using(lambda p: p.start(TRIAL), ref="verify")

    assert started.run.run_id == "1001"
    assert started.run.url == f"{gl.fake.base}/{PATH}/-/pipelines/1001"
    assert not started.status.done
    (create,) = gl.fake.sent("POST")
    assert create.path == f"/api/v4/projects/{ENCODED}/pipeline"  # the path, URL-encoded
    assert create.headers["private-token"] == TOKEN
    assert create.headers["content-type"] == "application/json"
    body = create.json()
    assert body["ref"] == "verify"
    assert body["variables"] == [
        {"key": "GOVERN_PACKAGE", "value": "cupy-cuda13x", "variable_type": "env_var"},
        {"key": "GOVERN_VERSION", "value": "14.1.1", "variable_type": "env_var"},
        {"key": "GOVERN_REQUIREMENT", "value": "cupy-cuda13x==14.1.1", "variable_type": "env_var"},
        {"key": "GOVERN_PROFILE", "value": "cuda13-linux", "variable_type": "env_var"},
        {"key": "GOVERN_CORRELATION_ID", "value": "govern-17-1", "variable_type": "env_var"},
    ]
    assert gl.fake.pipelines[1001]["ref"] == "verify"


def test_start_with_a_numeric_project_id(gl: GitLabVendor) -> None:
    started = gl.using(lambda p: p.start(TRIAL), project=4242)

    assert started.run.run_id == "1001"
    assert gl.fake.sent("POST")[0].path == "/api/v4/projects/4242/pipeline"
    assert gl.fake.pipelines[1001]["ref"] == "main"


def test_an_unknown_project_is_an_error(gl: GitLabVendor) -> None:
    with pytest.raises(CIError, match="HTTP 404: 404 Project Not Found"):
        gl.using(lambda p: p.start(TRIAL), project="acme/other")

    assert gl.fake.sent("POST")[0].path == "/api/v4/projects/acme%2Fother/pipeline"


def test_a_trigger_token_starts_the_pipeline_and_a_read_token_reads_it(gl: GitLabVendor) -> None:
    gl.fake.plan(finished("success", GitLabJob(7, trace=f"{MARKER}\n")))

    seen = gl.using(start_and_poll, **TRIGGERED)

    assert seen[-1].conclusion is Conclusion.PASSED
    (trigger,) = gl.fake.sent("POST")
    assert trigger.path == f"/api/v4/projects/{ENCODED}/trigger/pipeline"
    assert "private-token" not in trigger.headers
    assert trigger.query == {}  # the token travels in the body, never in the URL
    assert trigger.json() == {
        "token": TRIGGER,
        "ref": "main",
        "variables": {
            "GOVERN_PACKAGE": "cupy-cuda13x",
            "GOVERN_VERSION": "14.1.1",
            "GOVERN_REQUIREMENT": "cupy-cuda13x==14.1.1",
            "GOVERN_PROFILE": "cuda13-linux",
            "GOVERN_CORRELATION_ID": "govern-17-1",
        },
    }
    assert gl.fake.pipelines[1001]["source"] == "trigger"
    reads = gl.fake.sent("GET")
    assert reads
    assert all(r.headers["private-token"] == TOKEN for r in reads)


def test_a_wrong_trigger_token_is_an_auth_error(gl: GitLabVendor) -> None:
    with pytest.raises(CIAuthError) as caught:
        gl.using(lambda p: p.start(TRIAL), **{**TRIGGERED, "token": WRONG})

    assert "trigger token from $GITLAB_TRIGGER_TOKEN" in caught.value.message
    assert "HTTP 404" in caught.value.message
    assert caught.value.status == 404
    assert WRONG not in str(caught.value)
    assert gl.fake.pipelines == {}


def test_a_trigger_token_needs_a_read_token(gl: GitLabVendor) -> None:
    with pytest.raises(ConfigError, match="a trigger token cannot read pipelines"):
        gl.using(lambda p: p.start(TRIAL), token=TRIGGER, token_kind="trigger")


# -- polling and conclusions ----------------------------------------------------------------


def test_a_trace_is_read_and_shown_without_its_decorations(gl: GitLabVendor) -> None:
    trace = (
        "section_start:1780315170:prepare_script\r\x1b[0K\x1b[0KRunning on runner-1\n"
        "section_end:1780315171:prepare_script\r\x1b[0K\n"
        f'\x1b[32;1m$ echo "{MARKER}"\x1b[0;m\n{MARKER}\n'
    )
    gl.fake.plan(finished("success", GitLabJob(501, name="check", trace=trace)))

    final = gl.using(start_and_poll)[-1]

    assert final.installed == "14.1.1"
    assert final.log_excerpt is not None
    assert MARKER in final.log_excerpt
    assert "\x1b" not in final.log_excerpt
    assert "section_start" not in final.log_excerpt
    (jobs,) = gl.fake.sent("GET", "/pipelines/1001/jobs")
    assert jobs.path == f"/api/v4/projects/{ENCODED}/pipelines/1001/jobs"
    assert jobs.query == {"per_page": ["100"]}  # the first page: no page number
    (trace_request,) = gl.fake.sent("GET", "/trace")
    assert trace_request.path == f"/api/v4/projects/{ENCODED}/jobs/501/trace"


@pytest.mark.parametrize(
    ("plan", "ending"),
    [
        pytest.param(
            finished(
                "failed", GitLabJob(1, trace="ERROR: No matching distribution\n", status="failed")
            ),
            Ending(
                Conclusion.ERRORED,
                None,
                "the run failed (pipeline 1001 failed: job 'check' failed), but shows no evidence",
            ),
            id="failed-without-a-reason",
        ),
        pytest.param(
            finished("canceling", GitLabJob(1, trace=f"{MARKER}\n")),
            Ending(Conclusion.CANCELLED, None, "pipeline 1001 was canceled"),
            id="canceling",
        ),
        pytest.param(
            finished(
                "failed",
                GitLabJob(
                    1,
                    name="check",
                    trace=f"{MARKER}\n",
                    status="failed",
                    failure_reason="job_execution_timeout",
                ),
            ),
            Ending(Conclusion.TIMED_OUT, "14.1.1", "job 'check' timed out"),
            id="job-timed-out",
        ),
    ],
)
def test_conclusions(gl: GitLabVendor, plan: PipelinePlan, ending: Ending) -> None:
    gl.fake.plan(plan)

    ending.check(gl.using(start_and_poll)[-1])


@pytest.mark.parametrize(
    "trace",
    [
        pytest.param(
            "2026-06-01T11:59:40.123456Z 00O Resolved 9 packages\n"
            "2026-06-01T11:59:41.000001Z 00O  + cupy-cuda13x==14.1.1\n"
            "2026-06-01T11:59:41.500000Z 01E warning: no GPU\n",
            id="uv-summary-with-runner-timestamps",
        ),
        pytest.param(
            "2026-06-01T11:59:40.123456Z 00O govern-verify: instal"
            "2026-06-01T11:59:40.123499Z 00O+led cupy-cuda13x==14.1.1\n",
            id="marker-split-by-a-continuation-header",
        ),
    ],
)
def test_runner_timestamps_hide_no_evidence(gl: GitLabVendor, trace: str) -> None:
    gl.fake.plan(finished("success", GitLabJob(1, trace=trace)))

    final = gl.using(start_and_poll)[-1]

    Ending(Conclusion.PASSED, "14.1.1", "pipeline 1001 succeeded").check(final)


def test_evidence_is_read_in_job_order_from_jobs_that_ran(gl: GitLabVendor) -> None:
    # GitLab lists jobs newest first; the later install (the marker in job 30) must win.
    gl.fake.plan(
        finished(
            "success",
            GitLabJob(10, name="setup", trace="Successfully installed cupy-cuda13x-14.0.0\n"),
            GitLabJob(20, name="manual-deploy", started=False),
            GitLabJob(30, name="check", trace="Successfully installed cupy-cuda13x-14.1.1\n"),
        )
    )

    final = gl.using(start_and_poll)[-1]

    assert final.conclusion is Conclusion.PASSED
    assert final.installed == "14.1.1"
    traces = [r.path.split("/")[-2] for r in gl.fake.sent("GET", "/trace")]
    assert traces == ["10", "30"]


def test_jobs_are_read_page_by_page(gl: GitLabVendor) -> None:
    jobs = [GitLabJob(i, name=f"shard-{i}", started=False) for i in range(1, 151)]
    jobs[0] = GitLabJob(1, name="check", trace=f"{MARKER}\n")  # the oldest: on page 2
    gl.fake.plan(finished("success", *jobs))

    final = gl.using(start_and_poll)[-1]

    assert final.conclusion is Conclusion.PASSED
    pages = [r.query.get("page", ["1"]) for r in gl.fake.sent("GET", "/pipelines/1001/jobs")]
    assert pages == [["1"], ["2"]]


@pytest.mark.parametrize(
    "status",
    ["created", "waiting_for_resource", "preparing", "pending", "running", "scheduled", "manual"],
)
def test_statuses_that_are_not_an_end(gl: GitLabVendor, status: str) -> None:
    gl.fake.plan(PipelinePlan(statuses=(status,)))

    seen = gl.using(lambda p: start_and_poll(p, polls=2))

    assert [s.conclusion for s in seen] == [None, None]


# -- rate limits and bad answers ------------------------------------------------------------


def test_retry_after_wins_over_the_reset_time(gl: GitLabVendor) -> None:
    reset = int((NOW + timedelta(minutes=2)).timestamp())
    gl.fake.fail(gitlab_rate_limited(reset, retry_after=75), method="POST")

    with pytest.raises(CIRateLimited) as caught:
        gl.using(lambda p: p.start(TRIAL))

    assert caught.value.until == NOW + timedelta(seconds=75)
    assert len(gl.fake.sent("POST")) == 1


def test_a_job_list_of_the_wrong_shape_is_unavailable(gl: GitLabVendor) -> None:
    gl.fake.plan(finished("success", GitLabJob(1, trace=f"{MARKER}\n")))
    gl.fake.fail(json_reply(200, {"jobs": []}), path="/jobs")

    with pytest.raises(CIUnavailable, match="the pipeline's jobs is not a list"):
        gl.using(start_and_poll)


# -- from_config ----------------------------------------------------------------------------


def test_from_config_reads_the_table() -> None:
    provider = GitLabVendor().configured(
        {
            "provider": "gitlab",
            "project": PATH,
            "ref": "verify",
            "token-env": "GL_API",
            "api-url": "https://gitlab.example.org/api/v4/",
            "timeout": 1800.5,
        },
        {"GL_API": TOKEN},
    )

    assert provider.kind == "gitlab"
    assert (provider.project, provider.ref) == (PATH, "verify")
    assert provider.token_kind == "private"
    assert provider.token_source == "$GL_API"
    assert provider.api_url == "https://gitlab.example.org/api/v4"
    assert provider.timeout == 1800.5
    assert TOKEN not in repr(provider)


def test_from_config_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)

    async def build() -> GitLab:
        async with httpx.AsyncClient() as http:
            return from_config("gl", {"project": 4242}, http=http, environ=os.environ)

    provider = run(build())

    assert (provider.project, provider.ref, provider.token_kind) == (4242, "main", "private")
    assert provider.token_source == "$GITLAB_TOKEN"
    assert provider.timeout == 3600.0


def test_from_config_with_a_trigger_token() -> None:
    provider = GitLabVendor().configured(
        {"project": PATH, "token-kind": "trigger"},
        {"GITLAB_TRIGGER_TOKEN": TRIGGER, "GITLAB_TOKEN": TOKEN},
    )

    assert provider.token_kind == "trigger"
    assert provider.token_source == "$GITLAB_TRIGGER_TOKEN"
    assert provider.read_token_source == "$GITLAB_TOKEN"
    assert TRIGGER not in repr(provider)


def test_from_config_with_a_trigger_token_talks_to_the_configured_api(gl: GitLabVendor) -> None:
    async def action() -> str:
        async with httpx.AsyncClient(timeout=5.0) as http:
            provider = from_config(
                "gl",
                {
                    "project": PATH,
                    "token-kind": "trigger",
                    "api-url": gl.fake.url,
                    "read-token-env": "GL_READ",
                },
                http=http,
                environ={"GITLAB_TRIGGER_TOKEN": TRIGGER, "GL_READ": TOKEN},
            )
            return (await provider.start(TRIAL)).run.run_id

    assert run(action()) == "1001"
    assert gl.fake.sent("POST")[0].path.endswith("/trigger/pipeline")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "project is required"),
        ({"project": "acme"}, "project must be a numeric id or a path"),
        ({"project": "acme/../secret"}, "project must be a numeric id or a path"),
        ({"project": "/acme/tools"}, "project must be a numeric id or a path"),
        ({"project": 0}, "project must be a numeric id or a path"),
        ({"project": True}, "project must be a numeric id or a path"),
        ({"project": 4.5}, "project must be a numeric id or a path"),
        ({"project": PATH, "branch": "main"}, "unknown key(s) branch"),
        ({"project": PATH, "ref": ["main"]}, "ref must be a string, not an array"),
        ({"project": PATH, "token-kind": "deploy"}, "token-kind must be one of private, trigger"),
        (
            {"project": PATH, "read-token-env": "X"},
            'read-token-env is only for token-kind = "trigger"',
        ),
        (
            {"project": PATH, "token-kind": "trigger", "token-env": "T", "read-token-env": "T"},
            "token-env and read-token-env both name T",
        ),
    ],
)
def test_from_config_refuses_invalid_tables(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        GitLabVendor().configured(options, {"GITLAB_TOKEN": TOKEN, "T": TOKEN})

    assert caught.value.message.startswith("[tool.govern.ci.gl]: ")
    assert message in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("environ", "missing"),
    [
        ({"GITLAB_TOKEN": TOKEN}, "GITLAB_TRIGGER_TOKEN is not set"),
        ({"GITLAB_TRIGGER_TOKEN": TRIGGER}, "GITLAB_TOKEN is not set"),
        ({"GITLAB_TRIGGER_TOKEN": TRIGGER, "GITLAB_TOKEN": ""}, "GITLAB_TOKEN is empty"),
    ],
)
def test_from_config_with_a_trigger_token_needs_both_variables(
    environ: dict[str, str], missing: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        GitLabVendor().configured({"project": PATH, "token-kind": "trigger"}, environ)

    assert f"the environment variable {missing}" in caught.value.message
    for secret in (TOKEN, TRIGGER):
        assert secret not in caught.value.message
