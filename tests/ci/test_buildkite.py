"""Tests for :mod:`govern.ci.buildkite` against a fake Buildkite API on 127.0.0.1.

What every hosted provider does (tokens, rate limits, outages, cancelling, evidence,
from_config's shared keys) is tested for Buildkite too in test_http.py.
"""

from __future__ import annotations

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
    BuildkiteJob,
    BuildkiteVendor,
    BuildPlan,
    Ending,
    buildkite_rate_limited,
    start_and_poll,
)
from fakes.sleeps import run
from govern.ci import buildkite as buildkite_module
from govern.ci.base import Conclusion
from govern.ci.buildkite import Buildkite
from govern.errors import CIError, CIRateLimited, CIUnavailable, ConfigError

TOKEN = BuildkiteVendor.token


@pytest.fixture
def bk() -> Iterator[BuildkiteVendor]:
    """A fake Buildkite API for acme/gpu-checks that accepts :data:`TOKEN`."""
    with BuildkiteVendor().serving() as vendor:
        yield vendor


def finished(state: str, *jobs: BuildkiteJob) -> BuildPlan:
    """A build that runs once, then ends in ``state`` with ``jobs``."""
    return BuildPlan(states=("running", state), jobs=jobs)


# -- start ----------------------------------------------------------------------------------


def test_start_creates_a_build_that_carries_the_trial(bk: BuildkiteVendor) -> None:
    started = bk.using(lambda p: p.start(TRIAL), branch="verify", commit="abc123")

    assert started.run.run_id == "42"
    assert started.run.url == f"{bk.fake.base}/acme/gpu-checks/builds/42"
    assert not started.status.done
    (create,) = bk.fake.sent("POST")
    assert create.path == "/v2/organizations/acme/pipelines/gpu-checks/builds"
    assert create.headers["authorization"] == f"Bearer {TOKEN}"
    assert create.headers["content-type"] == "application/json"
    body = create.json()
    assert body["commit"] == "abc123"
    assert body["branch"] == "verify"
    assert body["message"] == ("govern verify cupy-cuda13x==14.1.1 on cuda13-linux (govern-17-1)")
    assert body["env"] == {
        "GOVERN_PACKAGE": "cupy-cuda13x",
        "GOVERN_VERSION": "14.1.1",
        "GOVERN_REQUIREMENT": "cupy-cuda13x==14.1.1",
        "GOVERN_PROFILE": "cuda13-linux",
        "GOVERN_CORRELATION_ID": "govern-17-1",
    }
    assert body["meta_data"] == {"govern-correlation-id": "govern-17-1"}


def test_start_defaults_to_head_of_main(bk: BuildkiteVendor) -> None:
    bk.using(lambda p: p.start(TRIAL))

    body = bk.fake.sent("POST")[0].json()
    assert (body["commit"], body["branch"]) == ("HEAD", "main")


def test_start_with_an_unknown_pipeline_is_an_error(bk: BuildkiteVendor) -> None:
    with pytest.raises(CIError, match=r"HTTP 404: Not Found") as caught:
        bk.using(lambda p: p.start(TRIAL), pipeline="nope")

    assert caught.value.status == 404
    assert bk.fake.sent("POST")[0].path == "/v2/organizations/acme/pipelines/nope/builds"


# -- polling and conclusions ----------------------------------------------------------------


def test_a_build_that_was_not_run_is_no_verdict(bk: BuildkiteVendor) -> None:
    bk.fake.plan(finished("not_run"))

    Ending(Conclusion.ERRORED, None, "build 42 was not run").check(bk.using(start_and_poll)[-1])


def test_a_job_that_timed_out_times_the_build_out(bk: BuildkiteVendor) -> None:
    job = BuildkiteJob("j1", name="check", log=f"{MARKER}\n", state="timed_out", exit_status=-1)
    bk.fake.plan(finished("failed", job))

    final = bk.using(start_and_poll)[-1]

    Ending(Conclusion.TIMED_OUT, "14.1.1", "job 'check' timed out").check(final)


def test_a_uv_summary_in_a_raw_log_is_evidence(bk: BuildkiteVendor) -> None:
    log = (
        "\x1b_bk;t=1780315170000\x07Installed 2 packages in 9ms\r\n"
        "\x1b_bk;t=1780315170001\x07 \x1b[32m+\x1b[39m \x1b[1mcupy-cuda13x\x1b[0m==14.1.1\r\n"
    )
    bk.fake.plan(finished("passed", BuildkiteJob("j1", log=log)))

    final = bk.using(start_and_poll)[-1]

    Ending(Conclusion.PASSED, "14.1.1", "build 42 passed").check(final)


def test_a_raw_log_is_shown_without_its_timestamp_markers(bk: BuildkiteVendor) -> None:
    log = f"\x1b_bk;t=1780315170000\x07\x1b[1m{MARKER}\x1b[0m\r\n"
    bk.fake.plan(finished("passed", BuildkiteJob("0190-aaaa", name="check", log=log)))

    final = bk.using(start_and_poll)[-1]

    assert final.log_excerpt is not None
    assert f"{MARKER}\n" in final.log_excerpt
    assert "\x1b" not in final.log_excerpt
    assert "\r" not in final.log_excerpt
    (log_request,) = bk.fake.sent("GET", "/log.txt")
    assert log_request.path.endswith("/builds/42/jobs/0190-aaaa/log.txt")


def test_evidence_is_read_from_script_jobs_that_ran_only(bk: BuildkiteVendor) -> None:
    bk.fake.plan(
        finished(
            "passed",
            BuildkiteJob("wait", type="waiter"),
            BuildkiteJob("setup", name="setup", log="Successfully installed cupy-cuda13x-14.0.0\n"),
            BuildkiteJob("never", name="optional", started=False),
            BuildkiteJob("check", name="check", log=f"{MARKER}\n"),
        )
    )

    final = bk.using(start_and_poll)[-1]

    assert final.conclusion is Conclusion.PASSED
    assert final.installed == "14.1.1"  # govern's marker outranks pip's summary
    logs = [r.path.rsplit("/", 2)[-2] for r in bk.fake.sent("GET", "/log.txt")]
    assert logs == ["setup", "check"]


@pytest.mark.parametrize("state", ["creating", "failing", "canceling", "waiting", "blocked"])
def test_states_that_are_not_an_end(bk: BuildkiteVendor, state: str) -> None:
    bk.fake.plan(BuildPlan(states=(state,), jobs=(BuildkiteJob("j1"),)))

    seen = bk.using(lambda p: start_and_poll(p, polls=2))

    assert [s.conclusion for s in seen] == [None, None]


def test_a_build_blocked_on_a_block_step_is_not_done(bk: BuildkiteVendor) -> None:
    bk.fake.plan(BuildPlan(states=("running",), jobs=(BuildkiteJob("j1"),), blocked=True))

    (status,) = bk.using(lambda p: start_and_poll(p, polls=1))

    assert status.conclusion is None
    assert "blocked" in status.detail


# -- rate limits and bad answers ------------------------------------------------------------


def test_the_later_of_the_organization_and_user_resets_is_waited_for(bk: BuildkiteVendor) -> None:
    bk.fake.fail(buildkite_rate_limited(42, user_reset=55), method="POST")

    with pytest.raises(CIRateLimited) as caught:
        bk.using(lambda p: p.start(TRIAL))

    assert caught.value.until == NOW + timedelta(seconds=55)
    assert caught.value.status == 429


def test_an_answer_of_the_wrong_shape_is_unavailable(bk: BuildkiteVendor) -> None:
    bk.fake.fail(json_reply(201, {"number": "forty-two"}), method="POST")

    with pytest.raises(CIUnavailable, match="the build number is not a int"):
        bk.using(lambda p: p.start(TRIAL))


# -- from_config ----------------------------------------------------------------------------


def test_from_config_reads_the_table() -> None:
    provider = BuildkiteVendor().configured(
        {
            "provider": "buildkite",
            "organization": "acme",
            "pipeline": "gpu-checks",
            "branch": "verify",
            "commit": "deadbeef",
            "token-env": "BK_TOKEN",
            "api-url": "https://buildkite.internal.example/",
            "timeout": 900,
        },
        {"BK_TOKEN": TOKEN},
    )

    assert provider.kind == "buildkite"
    assert provider.name == "gpu"
    assert (provider.organization, provider.pipeline) == ("acme", "gpu-checks")
    assert (provider.branch, provider.commit) == ("verify", "deadbeef")
    assert provider.api_url == "https://buildkite.internal.example"
    assert provider.token_source == "$BK_TOKEN"
    assert provider.timeout == 900.0
    assert TOKEN not in repr(provider)
    assert "$BK_TOKEN" in repr(provider)


def test_from_config_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("BUILDKITE_API_TOKEN", TOKEN)

    async def build() -> Buildkite:
        async with httpx.AsyncClient() as http:
            return buildkite_module.from_config(
                "gpu", {"organization": "acme", "pipeline": "gpu"}, http=http, environ=os.environ
            )

    provider = run(build())

    assert (provider.branch, provider.commit) == ("main", "HEAD")
    assert provider.token_source == "$BUILDKITE_API_TOKEN"
    assert provider.timeout == 3600.0
    assert buildkite_module.API_URL == "https://api.buildkite.com"
    assert provider.api_url == "https://api.buildkite.com"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pipeline": "p"}, "organization is required"),
        ({"organization": "acme"}, "pipeline is required"),
        ({"organization": 7, "pipeline": "p"}, "organization must be a string, not a number"),
        ({"organization": "../etc", "pipeline": "p"}, "organization '../etc' is not a slug"),
        ({"organization": "acme", "pipeline": "p", "branch": ""}, "branch must be a non-empty"),
    ],
)
def test_from_config_refuses_invalid_tables(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BuildkiteVendor().configured(options)

    assert caught.value.message.startswith("[tool.govern.ci.gpu]: ")
    assert message in caught.value.message
    assert "\n" not in caught.value.message
