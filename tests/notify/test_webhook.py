"""The webhook channel against a Slack-compatible receiver on 127.0.0.1
(tests/fakes/webhook.py, after https://api.slack.com/messaging/webhooks)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest

from fakes.api import Reply
from fakes.webhook import FakeWebhook, slack
from govern.errors import NotifyAuthError, NotifyError, NotifyUnavailable
from govern.notify.base import Message
from govern.notify.webhook import WebhookNotifier, slack_text

T = TypeVar("T")
MESSAGE = Message(
    key="remind:0123456789abcdef:14.1.1:webhook",
    kind="reminder",
    subject="cupy-cuda13x 14.1.1 passed verification",
    text="Change: cupy-cuda13x < 14.1.0 → cupy-cuda13x != 14.1.0 & done\n",
    markdown="",
)


def using(url: str, body: Callable[[WebhookNotifier], Awaitable[T]]) -> T:
    async def main() -> T:
        async with httpx.AsyncClient(timeout=5) as client:
            return await body(WebhookNotifier(url, client, source="$HOOK"))

    return asyncio.run(main())


def test_the_message_is_slacks_payload_with_an_idempotency_key(webhook: FakeWebhook) -> None:
    answer = using(webhook.hook_url, lambda n: n.send(MESSAGE))
    assert answer == {"status": 200, "answer": "ok"}
    (request,) = webhook.sent()
    assert request.json() == {
        "text": "*cupy-cuda13x 14.1.1 passed verification*\n\n"
        "Change: cupy-cuda13x &lt; 14.1.0 → cupy-cuda13x != 14.1.0 &amp; done"
    }
    assert request.headers["idempotency-key"] == MESSAGE.key
    assert request.headers["content-type"] == "application/json"
    assert webhook.messages == [request.json()]


def test_slack_text_escapes_its_three_control_characters() -> None:
    message = Message(key="k", kind="digest", subject="a <b>", text="x & y", markdown="")
    assert slack_text(message) == "*a &lt;b&gt;*\n\nx &amp; y"


@pytest.mark.parametrize(
    ("reply", "error", "said"),
    [
        (slack(500, "rollup_error"), NotifyUnavailable, "answered 500: rollup_error"),
        (
            slack(429, "rate_limited", {"Retry-After": "30"}),
            NotifyUnavailable,
            "answered 429: rate_limited (retry after 30 s)",
        ),
        (slack(403, "invalid_token"), NotifyAuthError, "answered 403: invalid_token"),
        (slack(410, "channel_is_archived"), NotifyError, "answered 410: channel_is_archived"),
        (slack(400, "invalid_payload"), NotifyError, "answered 400: invalid_payload"),
    ],
)
def test_each_answer_is_its_error_and_never_names_the_url(
    webhook: FakeWebhook,
    caplog: pytest.LogCaptureFixture,
    reply: Reply,
    error: type[NotifyError],
    said: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    webhook.fail(reply)
    with pytest.raises(NotifyError) as caught:
        using(webhook.hook_url, lambda n: n.send(MESSAGE))
    assert type(caught.value) is error
    assert caught.value.message == f"webhook 127.0.0.1:{webhook.port} ($HOOK) {said}"
    assert caught.value.status == reply.status
    assert webhook.secret not in f"{caught.value.message} {caught.value.tip} {caplog.text}"
    assert caught.value.__cause__ is None


def test_a_wrong_path_is_slacks_no_service(webhook: FakeWebhook) -> None:
    wrong = webhook.hook_url.rsplit("/", 1)[0] + "/revoked-token-123"
    with pytest.raises(NotifyError) as caught:
        using(wrong, lambda n: n.send(MESSAGE))
    assert (
        caught.value.message == f"webhook 127.0.0.1:{webhook.port} ($HOOK) answered 404: no_service"
    )
    assert "revoked-token-123" not in caught.value.message


def test_an_unreachable_webhook_is_transient_and_keeps_its_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = "http://127.0.0.1:9/services/T1/B1/s3cr3t-webhook-token"  # discard: refused
    with pytest.raises(NotifyUnavailable) as caught:
        using(url, lambda n: n.send(MESSAGE))
    assert caught.value.message.startswith("webhook 127.0.0.1:9 ($HOOK) could not be reached: ")
    assert "s3cr3t" not in caught.value.message + caplog.text


@pytest.mark.parametrize(
    "url",
    ["http://hooks.slack.com/services/T/B/secret-xyz", "ftp://x/secret-xyz", "secret-xyz"],
)
def test_a_url_that_is_not_https_is_refused_without_being_shown(url: str) -> None:
    with pytest.raises(NotifyError) as caught:
        WebhookNotifier(url, httpx.AsyncClient(), source="$HOOK")
    assert caught.value.message == "$HOOK is not an https:// URL"
    assert "secret-xyz" not in str(caught.value.tip)


def test_its_repr_and_target_show_the_host_only(webhook: FakeWebhook) -> None:
    def shown(notifier: WebhookNotifier) -> Any:
        async def both() -> tuple[str, Any]:
            return repr(notifier), notifier.target(MESSAGE)

        return both()

    assert using(webhook.hook_url, shown) == (
        f"WebhookNotifier('127.0.0.1:{webhook.port}')",
        f"127.0.0.1:{webhook.port}",
    )


@pytest.mark.parametrize(
    ("error", "maybe_sent"),
    [
        (httpx.ConnectError("refused"), False),
        (httpx.ConnectTimeout("slow to connect"), False),
        (httpx.ReadTimeout("no answer"), True),
        (httpx.RemoteProtocolError("closed mid-answer"), True),
    ],
)
def test_a_failure_after_the_post_left_may_have_arrived(
    error: httpx.HTTPError, maybe_sent: bool
) -> None:
    """Only a failure before the request left is sent again; after it, the outbox marks the
    message unconfirmed (a chat cannot be searched)."""
    secret = "https://hooks.example/services/T000/B000/" + "s" * 24

    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    async def main() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await WebhookNotifier(secret, client, source="$HOOK").send(MESSAGE)

    with pytest.raises(NotifyUnavailable) as caught:
        asyncio.run(main())
    assert caught.value.maybe_sent is maybe_sent
    assert "s" * 24 not in caught.value.message
