"""The REST plumbing (:mod:`govern.http.client`) and what every hosted provider does over it
(:mod:`govern.ci.hosted`), the latter run against each vendor's fake on 127.0.0.1.

What only one vendor does is tested in test_github.py, test_buildkite.py and
test_gitlab.py; the fakes and the kit are tests/fakes/api.py and tests/fakes/ci.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from fakes.api import FakeServer, Recorded, Reply, invalid_json, json_reply
from fakes.ci import (
    MARKER,
    NOW,
    REPRODUCED,
    SECRETS,
    TRIAL,
    VENDORS,
    Ending,
    Vendor,
    start_and_poll,
)
from fakes.sleeps import Sleeps, run
from govern.ci.base import Conclusion, RunRef, RunStatus, find_evidence, strip_ansi
from govern.ci.hosted import HostedProvider
from govern.errors import CI_ERRORS, CIAuthError, CIError, CIRateLimited, CIUnavailable, ConfigError
from govern.http.client import ApiClient

TOKEN = "tok_SECRETTOKEN123456"
PIPELINES = ["buildkite", "gitlab"]  # a trial is a run created by one (retried) request


@pytest.fixture(params=list(VENDORS))
def vendor(request: pytest.FixtureRequest) -> Iterator[Vendor[Any, Any]]:
    """Each vendor's fake, started; stopped (threads joined) after the test."""
    with VENDORS[request.param]().serving() as served:
        yield served


def started_then(vendor: Vendor[Any, Any], **options: Any) -> RunStatus:
    """Start the trial and read its status once."""

    async def action(provider: HostedProvider) -> RunStatus:
        started = await provider.start(TRIAL)
        return await provider.status(TRIAL, started.run)

    return vendor.using(action, **options)


# -- ApiClient ------------------------------------------------------------------------------


class Echo(FakeServer):
    """An API that answers every request with 200 ``{"ok": true}`` unless told otherwise."""

    def route(self, request: Recorded) -> Reply:
        return json_reply(200, {"ok": True})


@pytest.fixture
def echo() -> Iterator[Echo]:
    with Echo() as server:
        yield server


def call(url: str, method: str = "GET", *, sleeps: Sleeps | None = None, **options: Any) -> Any:
    """One ``ApiClient.json`` call to the API at ``url``, with a token from $API_TOKEN."""

    async def main() -> Any:
        async with httpx.AsyncClient(timeout=5.0) as http:
            client = ApiClient(
                http,
                vendor="acme",
                base_url=url,
                headers={"Authorization": f"Bearer {TOKEN}"},
                secrets=(TOKEN,),
                token_source="$API_TOKEN",
                sleep=sleeps or Sleeps(),
                clock=lambda: NOW,
                errors=CI_ERRORS,
            )
            return await client.json(method, "/things", **options)

    return run(main())


@pytest.mark.parametrize(
    ("reply", "error", "text"),
    [
        (json_reply(401, {"message": "Bad credentials"}), CIAuthError, "(HTTP 401: Bad"),
        (json_reply(403, {"message": "Not accessible"}), CIAuthError, "HTTP 403: Not"),
        (json_reply(404, {"message": "Not Found"}), CIError, "HTTP 404: Not Found"),
        (json_reply(409, {"message": "Conflict"}), CIError, "HTTP 409: Conflict"),
        (json_reply(422, {"message": "Unexpected inputs"}), CIError, "HTTP 422: Unexpected"),
        (json_reply(429, {}, {"Retry-After": "600"}), CIRateLimited, "(HTTP 429) until"),
        (json_reply(403, {}, {"X-RateLimit-Remaining": "0"}), CIRateLimited, "(HTTP 403)"),
        (json_reply(403, {}, {"RateLimit-User-Remaining": "0"}), CIRateLimited, "(HTTP 403)"),
        (Reply(503, b"down", "text/plain"), CIUnavailable, "HTTP 503 after 3 attempts"),
        (invalid_json(), CIUnavailable, "answered with invalid JSON"),
    ],
)
def test_every_error_from_an_answer_carries_its_status(
    echo: Echo, reply: Reply, error: type[CIError], text: str
) -> None:
    echo.fail(reply, times=3)

    with pytest.raises(CIError) as caught:
        call(echo.url)

    assert type(caught.value) is error
    assert caught.value.status == reply.status
    assert text in caught.value.message


def test_an_error_without_an_answer_has_no_status() -> None:
    with Echo() as server:
        url = server.url  # the port is closed once the server stops: connections are refused

    with pytest.raises(CIUnavailable, match="connection failed") as caught:
        call(url)

    assert caught.value.status is None


def test_a_request_sent_once_is_not_retried(echo: Echo) -> None:
    sleeps = Sleeps()
    echo.fail(Reply(502, b"Bad Gateway", "text/plain"))
    with pytest.raises(CIUnavailable, match=r"HTTP 502 after 1 attempt\Z") as caught:
        call(echo.url, "POST", attempts=1, sleeps=sleeps)
    assert caught.value.status == 502

    assert sleeps.delays == []

    echo.fail(Reply(502, b"Bad Gateway", "text/plain"), times=3)
    with pytest.raises(CIUnavailable, match="HTTP 502 after 3 attempts"):
        call(echo.url, "POST", sleeps=sleeps)
    assert len(echo.sent("POST")) == 4
    assert len(sleeps.delays) == 2


def test_a_request_sent_once_is_sent_again_after_a_short_rate_limit(echo: Echo) -> None:
    """A rate limit refused the request: nothing was done, so waiting it out is safe."""
    sleeps = Sleeps()
    echo.fail(json_reply(429, {}, {"Retry-After": "1"}))
    assert call(echo.url, "POST", attempts=1, sleeps=sleeps) == {"ok": True}
    assert sleeps.delays == [1.0]
    assert len(echo.sent("POST")) == 2

    # ...but a 5xx after the refusal may have done it: not sent again.
    echo.fail(json_reply(429, {}, {"Retry-After": "1"}))
    echo.fail(Reply(502, b"Bad Gateway", "text/plain"))
    with pytest.raises(CIUnavailable, match=r"HTTP 502 after 2 attempts\Z"):
        call(echo.url, "POST", attempts=1, sleeps=sleeps)
    assert len(echo.sent("POST")) == 4

    # Refusals are sent again as many times as the client's attempts, no more.
    echo.fail(json_reply(429, {}, {"Retry-After": "1"}), times=3)
    with pytest.raises(CIRateLimited):
        call(echo.url, "POST", attempts=1, sleeps=sleeps)
    assert len(echo.sent("POST")) == 7
    assert sleeps.delays == [1.0, 1.0, 1.0, 1.0]

    echo.fail(json_reply(429, {}, {"Retry-After": "600"}))  # a long one is raised at once
    with pytest.raises(CIRateLimited):
        call(echo.url, "POST", attempts=1, sleeps=sleeps)
    assert len(echo.sent("POST")) == 8


def test_another_credential_shares_the_secrets(echo: Echo) -> None:
    echo.fail(json_reply(401, {"message": f"token {TOKEN} refused"}))

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5.0) as http:
            client = ApiClient(
                http,
                vendor="acme",
                base_url=echo.url,
                headers={"Authorization": f"Bearer {TOKEN}"},
                secrets=(TOKEN, "glptt-SECRETTRIGGER"),
                token_source="$API_TOKEN",
                errors=CI_ERRORS,
            )
            other = client.with_credentials({"X-Other": "1"}, token_source="$TRIGGER")
            await other.json("POST", "/trigger")

    with pytest.raises(CIAuthError) as caught:
        run(main())

    assert (
        caught.value.message == "acme refused the token from $TRIGGER (HTTP 401: token *** refused)"
    )
    (request,) = echo.sent()
    assert "authorization" not in request.headers
    assert request.headers["x-other"] == "1"


def test_evidence_is_found_through_colour_codes() -> None:
    log = "\x1b[32;1m$ pip install\x1b[0;m\n \x1b[32m+\x1b[39m \x1b[1mcupy-cuda13x\x1b[0m==14.1.1\n"
    assert find_evidence(log, "cupy-cuda13x") == "14.1.1"
    assert strip_ansi("\x1b[0K\x1b[31;1mred\x1b[0m \x1b[?25h") == "red "


# -- every hosted provider: tokens ----------------------------------------------------------


@pytest.mark.parametrize("source", [None, "$VERIFY_TOKEN"])
def test_a_wrong_token_is_an_auth_error_that_names_its_variable(
    vendor: Vendor[Any, Any], caplog: pytest.LogCaptureFixture, source: str | None
) -> None:
    options: dict[str, Any] = {} if source is None else {"token_source": source}
    variable = source or f"${vendor.variable}"

    with caplog.at_level(logging.DEBUG), pytest.raises(CIAuthError) as caught:
        vendor.using(lambda p: p.start(TRIAL), token=vendor.wrong, **options)

    message = caught.value.message
    assert message == (
        f"{vendor.name} refused the token from {variable} (HTTP 401: {vendor.unauthorized})"
    )
    assert caught.value.status == 401
    assert caught.value.tip is not None
    assert variable in caught.value.tip
    assert vendor.token_of(vendor.fake.sent("POST")[0]) == vendor.wrong
    assert vendor.wrong not in message + caught.value.tip + caplog.text


def test_tokens_never_appear_in_errors_logs_or_reprs(
    vendor: Vendor[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []

    async def failing(provider: HostedProvider) -> None:
        texts.append(repr(provider))
        started = await provider.start(TRIAL)
        vendor.fake.fail(vendor.rate_limited(600), method="GET")
        vendor.fake.fail(Reply(503, b"down"), method="GET", times=3)
        vendor.fake.fail(invalid_json(), method="GET")
        for _ in range(3):
            with pytest.raises(CIError) as caught:
                await provider.status(TRIAL, started.run)
            texts.extend([str(caught.value), repr(caught.value), caught.value.tip or ""])
        await provider.cancel(RunRef("31337"))

    for token, options in vendor.credentials():
        vendor.will_run()
        vendor.using(failing, token=token, **options)
    for token, options in [*vendor.credentials(), (vendor.wrong, {})]:
        with pytest.raises(CIAuthError) as caught:
            vendor.using(lambda p: p.start(TRIAL), token=token + "x", **options)
        texts.extend([str(caught.value), repr(caught.value), caught.value.tip or ""])

    assert vendor.token_of(vendor.fake.sent()[0]) == vendor.token
    assert caplog.text  # httpx and the provider did log
    for text in [*texts, caplog.text]:
        for secret in SECRETS:
            assert secret not in text


def test_a_log_excerpt_is_the_end_of_a_long_log_and_never_holds_the_token(
    vendor: Vendor[Any, Any],
) -> None:
    noise = "".join(f"line {i}: compiling kernels\n" for i in range(5000))
    token = vendor.token
    log = f"{noise}echo {token}\ncurl -H 'PRIVATE-TOKEN: {token}'\n{MARKER}\n"
    vendor.will_end(True, log)

    final = vendor.using(start_and_poll)[-1]

    assert final.conclusion is Conclusion.PASSED
    assert final.log_excerpt is not None
    assert len(final.log_excerpt) < 17 * 1024
    assert final.log_excerpt.startswith("[... ")
    assert MARKER in final.log_excerpt
    assert token not in final.log_excerpt
    assert "echo ***" in final.log_excerpt
    assert "PRIVATE-TOKEN: ***" in final.log_excerpt


# -- every hosted provider: a run -----------------------------------------------------------


def test_start_passes_the_reproducer_only_when_the_trial_has_one(
    vendor: Vendor[Any, Any],
) -> None:
    vendor.using(lambda p: p.start(TRIAL))
    vendor.using(lambda p: p.start(REPRODUCED))

    without, with_one = vendor.received()
    assert "reproducer" not in without
    assert with_one["reproducer"] == "python -c 'import cupy; cupy.arange(3).sum()'"
    assert with_one["correlation_id"] == "govern-17-2"


def test_polls_through_running_states_to_a_pass(vendor: Vendor[Any, Any]) -> None:
    progress = vendor.progress
    log = f"--- installing\nCollecting cupy-cuda13x==14.1.1\n{MARKER}\n--- check\nok\n"
    vendor.will_end(True, log, progress)

    seen = vendor.using(start_and_poll)

    (run_id,) = vendor.runs()
    assert [s.conclusion for s in seen] == [None] * len(progress) + [Conclusion.PASSED]
    assert [s.detail for s in seen[:-1]] == [vendor.running(run_id, s) for s in progress]
    final = seen[-1]
    assert final.installed == "14.1.1"
    assert final.detail == vendor.passed(run_id)
    assert final.log_excerpt is not None
    assert MARKER in final.log_excerpt
    assert final.url == vendor.web_url(run_id)
    assert final.finished_at == vendor.finished_at
    assert len(vendor.fake.sent("GET", vendor.run_path(run_id))) == len(progress) + 1
    # the log is read once, when the run has finished
    (log_request,) = vendor.fake.sent("GET", vendor.log_path)
    assert vendor.fake.sent()[-1] is log_request


@pytest.mark.parametrize(
    ("passed", "log", "conclusion", "installed", "detail"),
    [
        pytest.param(True, MARKER, Conclusion.PASSED, "14.1.1", "{passed}", id="passed"),
        pytest.param(
            True,
            "tests passed",
            Conclusion.ERRORED,
            None,
            "no evidence that cupy-cuda13x==14.1.1 was installed",
            id="passed-without-evidence",
        ),
        pytest.param(
            True,
            "govern-verify: installed cupy-cuda13x==14.0.0",
            Conclusion.ERRORED,
            "14.0.0",
            "installed cupy-cuda13x 14.0.0, not 14.1.1",
            id="passed-with-another-version",
        ),
        pytest.param(
            False, f"{MARKER}\nFAILED", Conclusion.FAILED, "14.1.1", "{failed}", id="failed"
        ),
        pytest.param(
            False,
            "ERROR: No matching distribution",
            Conclusion.ERRORED,
            None,
            "the run failed ({failed}), but shows no evidence",
            id="failed-without-evidence",
        ),
        pytest.param(
            True,
            "Successfully installed cupy-cuda13x-14.1.1 fastrlock-0.8.3",
            Conclusion.PASSED,
            "14.1.1",
            "{passed}",
            id="pip-summary",
        ),
        pytest.param(
            True, " + cupy-cuda13x==14.1.1", Conclusion.PASSED, "14.1.1", "{passed}", id="uv"
        ),
    ],
)
def test_the_evidence_decides_a_green_or_red_run(
    vendor: Vendor[Any, Any],
    passed: bool,
    log: str,
    conclusion: Conclusion,
    installed: str | None,
    detail: str,
) -> None:
    vendor.will_end(passed, f"{log}\n")

    final = vendor.using(start_and_poll)[-1]

    run_id = vendor.runs()[0]
    words = {"passed": vendor.passed(run_id), "failed": vendor.failed(run_id)}
    Ending(conclusion, installed, detail.format(**words)).check(final)


@pytest.mark.parametrize("outcome", ["cancelled", "skipped"])
def test_a_run_that_ended_without_running_the_check_is_no_verdict(
    vendor: Vendor[Any, Any], outcome: str
) -> None:
    vendor.will_stop(outcome)

    final = vendor.using(start_and_poll)[-1]

    conclusion = Conclusion.CANCELLED if outcome == "cancelled" else Conclusion.ERRORED
    Ending(conclusion, None, vendor.stopped(vendor.runs()[0], outcome)).check(final)
    assert final.log_excerpt is None
    assert vendor.fake.sent("GET", vendor.log_path) == []


@pytest.mark.parametrize("status", [404, 410])
def test_a_log_that_cannot_be_read_is_no_evidence(vendor: Vendor[Any, Any], status: int) -> None:
    vendor.will_end(True, f"{MARKER}\n")
    vendor.fake.fail(json_reply(status, {"message": "Gone"}), path=vendor.log_path)

    final = vendor.using(start_and_poll)[-1]

    assert final.conclusion is Conclusion.ERRORED
    assert final.installed is None
    assert final.log_excerpt is None
    assert "no evidence" in final.detail
    assert "could not be read" in final.detail
    assert f"HTTP {status}" in final.detail


def test_a_run_that_never_finishes_keeps_reporting_no_conclusion(
    vendor: Vendor[Any, Any],
) -> None:
    vendor.will_run()

    seen = vendor.using(lambda p: start_and_poll(p, polls=6))

    assert len(seen) == 6
    assert all(s.conclusion is None and not s.done for s in seen)
    assert seen[-1].detail == vendor.running(vendor.runs()[0], vendor.progress[-1])
    assert vendor.fake.sent("GET", vendor.log_path) == []
    assert vendor.fake.sent("GET", "/jobs") == []


def test_a_run_id_that_is_not_a_number_is_refused(vendor: Vendor[Any, Any]) -> None:
    with pytest.raises(CIError, match=vendor.not_a_run):
        vendor.using(lambda p: p.status(TRIAL, RunRef("../../user")))

    assert not vendor.fake.sent()


# -- every hosted provider: cancel ----------------------------------------------------------


def test_cancel_stops_a_running_run(vendor: Vendor[Any, Any]) -> None:
    vendor.will_run()

    async def action(provider: HostedProvider) -> tuple[RunStatus, RunStatus]:
        started = await provider.start(TRIAL)
        before = await provider.status(TRIAL, started.run)
        await provider.cancel(started.run)
        return before, await provider.status(TRIAL, started.run)

    before, after = vendor.using(action)

    run_id = vendor.runs()[0]
    (cancel,) = vendor.fake.sent(path="/cancel")
    assert cancel.method == vendor.cancel_method
    assert cancel.path == f"{vendor.run_path(run_id)}/cancel"
    assert vendor.token_of(cancel) == vendor.token
    assert before.conclusion is None
    assert after.conclusion is Conclusion.CANCELLED
    assert vendor.cancelled in after.detail


def test_cancel_is_best_effort(vendor: Vendor[Any, Any], caplog: pytest.LogCaptureFixture) -> None:
    vendor.will_end(True, f"{MARKER}\n")

    async def action(provider: HostedProvider) -> None:
        started = await provider.start(TRIAL)
        for _ in range(3):
            await provider.status(TRIAL, started.run)
        await provider.cancel(started.run)  # finished
        await provider.cancel(RunRef("999"))  # unknown: 404
        vendor.fake.fail(Reply(503, b"Unavailable"), path="/cancel", times=3)
        await provider.cancel(started.run)  # 503 three times

    with caplog.at_level(logging.INFO):
        vendor.using(action)

    run_id = vendor.runs()[0]
    cancels = [
        r.path.removesuffix("/cancel").rsplit("/", 1)[-1] for r in vendor.fake.sent(path="/cancel")
    ]
    assert cancels == [run_id, "999", run_id, run_id, run_id]
    assert "HTTP 404" in caplog.text
    assert "HTTP 503 after 3 attempts" in caplog.text
    if vendor.refused_cancel is not None:
        assert f"HTTP {vendor.refused_cancel}" in caplog.text


# -- every hosted provider: rate limits, outages, bad answers -------------------------------


def test_a_long_rate_limit_is_raised_with_the_moment_to_try_again(
    vendor: Vendor[Any, Any],
) -> None:
    vendor.will_run()
    vendor.fake.fail(vendor.rate_limited(42), method="GET")
    sleeps = Sleeps()

    with pytest.raises(CIRateLimited) as caught:
        started_then(vendor, sleeps=sleeps)

    assert caught.value.until == NOW + timedelta(seconds=42)
    assert caught.value.until == datetime(2026, 6, 1, 12, 0, 42, tzinfo=UTC)
    limited = f"rate limited (HTTP {vendor.limit_status}) until 2026-06-01 12:00:42 UTC"
    assert limited in caught.value.message
    assert sleeps.delays == []  # not retried: the wait is too long
    assert len(vendor.fake.sent("GET")) == 1


def test_a_short_rate_limit_is_slept_through(vendor: Vendor[Any, Any]) -> None:
    vendor.will_end(True, f"{MARKER}\n")
    vendor.fake.fail(vendor.rate_limited(2), path=vendor.log_path)
    sleeps = Sleeps()

    final = vendor.using(start_and_poll, sleeps=sleeps)[-1]

    assert final.conclusion is Conclusion.PASSED
    assert sleeps.delays == [2.0]
    assert len(vendor.fake.sent("GET", vendor.log_path)) == 2


def test_server_errors_are_retried_then_unavailable(vendor: Vendor[Any, Any]) -> None:
    vendor.will_run()
    vendor.fake.fail(
        Reply(502, b"<html>502 Bad Gateway</html>", "text/html"), method="GET", times=3
    )
    sleeps = Sleeps()

    with pytest.raises(CIUnavailable, match="HTTP 502 after 3 attempts") as caught:
        started_then(vendor, sleeps=sleeps)

    assert caught.value.status == 502
    assert len(vendor.fake.sent("GET")) == 3
    assert len(sleeps.delays) == 2


def test_a_server_error_then_an_answer_is_the_answer(vendor: Vendor[Any, Any]) -> None:
    vendor.will_run()
    vendor.fake.fail(json_reply(502, {"message": "Bad Gateway"}), method="GET")
    sleeps = Sleeps()

    status = started_then(vendor, sleeps=sleeps)

    assert status.conclusion is None
    assert len(vendor.fake.sent("GET")) == 2
    assert len(sleeps.delays) == 1


@pytest.mark.parametrize("status", [500, 502])
def test_a_create_request_that_keeps_failing_creates_nothing(
    vendor: Vendor[Any, Any], status: int
) -> None:
    # Buildkite and GitLab retry; a GitHub dispatch is sent once, since an answer lost to
    # a 5xx may still have started a run.
    vendor.fake.fail(Reply(status, b"<h1>Server Error</h1>", "text/html"), times=3)

    with pytest.raises(CIUnavailable, match=rf"HTTP {status} after \d attempt") as caught:
        vendor.using(lambda p: p.start(TRIAL))

    assert caught.value.status == status
    assert len(vendor.fake.sent("POST")) == vendor.create_attempts
    assert vendor.runs() == []


@pytest.mark.parametrize("vendor", PIPELINES, indirect=True)
@pytest.mark.parametrize("fault", ["server-error", "short-rate-limit"])
def test_a_create_request_is_retried(vendor: Vendor[Any, Any], fault: str) -> None:
    if fault == "server-error":
        vendor.fake.fail(json_reply(502, {"message": "Bad Gateway"}), method="POST")
    else:
        vendor.fake.fail(vendor.rate_limited(3), method="POST")
    sleeps = Sleeps()

    started = vendor.using(lambda p: p.start(TRIAL), sleeps=sleeps)

    assert [started.run.run_id] == vendor.runs()
    assert len(vendor.fake.sent("POST")) == 2
    assert len(sleeps.delays) == 1
    if fault == "short-rate-limit":
        assert sleeps.delays == [3.0]


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_an_answer_that_is_not_json_is_unavailable(vendor: Vendor[Any, Any], method: str) -> None:
    vendor.will_run()
    vendor.fake.fail(invalid_json(), method=method)

    with pytest.raises(CIUnavailable, match="invalid JSON") as caught:
        started_then(vendor)

    assert caught.value.status == 200


# -- every hosted provider: from_config -----------------------------------------------------


def test_from_config_provider_talks_to_the_configured_api(vendor: Vendor[Any, Any]) -> None:
    async def action() -> str:
        async with httpx.AsyncClient(timeout=5.0) as http:
            provider = vendor.configure(
                {**vendor.table, "api-url": vendor.fake.url},
                http=http,
                environ={vendor.variable: vendor.token},
            )
            started = await provider.start(TRIAL)
            return str(started.run.run_id)

    assert [run(action())] == vendor.runs()


def test_from_config_names_the_token_variable_in_the_repr(vendor: Vendor[Any, Any]) -> None:
    environ = {"CI_TOKEN": vendor.token}
    provider = vendor.configured({**vendor.table, "token-env": "CI_TOKEN"}, environ)

    assert provider.kind == vendor.kind
    assert provider.token_source == "$CI_TOKEN"
    assert "$CI_TOKEN" in repr(provider)
    assert vendor.token not in repr(provider)
    assert vendor.token not in repr(vars(provider))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "red"}, "unknown key(s) colour"),
        ({"timeout": "1h"}, "timeout must be a positive number of seconds, not '1h'"),
        ({"timeout": 0}, "timeout must be a positive"),
        ({"timeout": True}, "timeout must be a positive"),
        ({"timeout": -5}, "timeout must be a positive number of seconds, not -5"),
        ({"timeout": 700000}, "timeout must be from 1 to 604800 seconds"),
        ({"timeout": float("inf")}, "timeout must be from 1 to 604800 seconds"),
        ({"api-url": "ftp://ci.example.com"}, "api-url is not an https:// URL"),
        ({"api-url": "gitlab.com"}, "api-url is not an http"),
        ({"api-url": "https://u:p@ci.example.com"}, "without credentials"),
        ({"api-url": "https://ci.example.com/api?private_token=x"}, "without credentials"),
        ({"api-url": "http://ci.example.com/api/v3"}, "plain http"),
        ({"token-env": "NOT A NAME"}, "token-env must be the name of an environment variable"),
        ({"token-env": 7}, "token-env must be a string, not a number"),
    ],
)
def test_from_config_refuses_invalid_tables(
    vendor: Vendor[Any, Any], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        vendor.configured({**vendor.table, **options})

    assert caught.value.message.startswith(f"[tool.govern.ci.{vendor.table_name}]: ")
    assert message in caught.value.message
    assert "\n" not in caught.value.message
    assert vendor.token not in caught.value.message + (caught.value.tip or "")


def test_from_config_refuses_another_provider(vendor: Vendor[Any, Any]) -> None:
    other = "buildkite" if vendor.kind == "gitlab" else "gitlab"

    with pytest.raises(ConfigError, match=f"provider is '{other}'"):
        vendor.configured({**vendor.table, "provider": other})


@pytest.mark.parametrize("key", ["token", "private-token", "Token"])
def test_from_config_refuses_a_token_written_in_the_table(
    vendor: Vendor[Any, Any], key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        vendor.configured({**vendor.table, key: vendor.token})

    message = caught.value.message
    table = f"[tool.govern.ci.{vendor.table_name}]"
    assert message.startswith(f"{table}: {key} must not be written in the configuration")
    assert "holds a token" in message
    assert vendor.token not in message
    assert caught.value.tip is not None
    assert vendor.token not in caught.value.tip
    assert "token-env" in caught.value.tip


@pytest.mark.parametrize("value", [None, "", " "])
def test_from_config_needs_the_token_variable(vendor: Vendor[Any, Any], value: str | None) -> None:
    environ = {} if value is None else {vendor.variable: value}

    with pytest.raises(ConfigError) as caught:
        vendor.configured(vendor.table, environ)

    message = caught.value.message
    assert message.startswith(f"[tool.govern.ci.{vendor.table_name}]: ")
    state = "is not set" if value is None else "is empty"
    assert f"the environment variable {vendor.variable} {state}" in message
    assert caught.value.tip is not None
    assert "It needs " in caught.value.tip


def test_from_config_reads_only_the_environ_it_is_given(
    vendor: Vendor[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_TOKEN", vendor.token)  # the process environment is not read

    with pytest.raises(ConfigError) as caught:
        vendor.configured({**vendor.table, "token-env": "CI_TOKEN"})

    assert "CI_TOKEN is not set" in caught.value.message
    assert vendor.token not in str(caught.value)
