"""Reminders and digests as a chat message, through a Slack-compatible incoming webhook.

Notes: docs/internals.md#notify.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from govern.errors import NotifyAuthError, NotifyError, NotifyUnavailable
from govern.http.body import ERROR_BODY, BodyTooLarge, answered, exchange
from govern.notify.base import Message, Skipped
from govern.redact import redact, scrub

__all__ = ["WebhookNotifier", "slack_text"]

_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_LOGGERS = ("httpx", "httpcore")
# Failures before the request left: connecting, waiting for a connection, a bad URL.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
# httpcore's trace event as the request starts to leave (http11.send_request_headers.started,
# http2.send_request_headers.started): before it, nothing of the message has been sent.
_SENDING = "send_request_headers.started"


class _Progress:
    """Whether a request has started to leave, from httpcore's ``trace`` extension
    (https://www.python-httpx.org/advanced/extensions/#trace)."""

    def __init__(self) -> None:
        self.sending = False

    async def trace(self, event: str, info: dict[str, Any]) -> None:
        if event.endswith(_SENDING):
            self.sending = True


def slack_text(message: Message) -> str:
    """The chat message: the subject in bold, then the text, escaped for Slack."""
    text = f"*{message.subject}*\n\n{message.text.rstrip()}"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Scrubbing(logging.Filter):
    """Replaces the webhook's secrets in every record of the HTTP stack's loggers."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        cleaned = scrub(text, self.secrets)
        if cleaned != text:
            record.msg, record.args = cleaned, ()
        return True


@contextmanager
def _scrubbed_logs(secrets: tuple[str, ...]) -> Iterator[None]:
    scrubbing = _Scrubbing(secrets)
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    for logger in loggers:
        logger.addFilter(scrubbing)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(scrubbing)


class WebhookNotifier:
    """Posts to the incoming webhook at ``url`` (a secret) on an injected client.

    ``source`` names where the URL came from (``$GOVERN_WEBHOOK_URL``) for messages.
    """

    name = "webhook"

    def __init__(
        self,
        url: str,
        client: httpx.AsyncClient,
        *,
        source: str = "the webhook URL",
        timeout: float = 30.0,
    ) -> None:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        if not host or not (
            parts.scheme == "https" or (parts.scheme == "http" and host in _LOOPBACK)
        ):
            raise NotifyError(
                f"{source} is not an https:// URL",
                tip="Give the incoming webhook's URL as the chat service shows it "
                "(https://hooks.slack.com/services/...).",
            )
        self._url = url.strip()
        self._client = client
        self._timeout = timeout
        self.source = source
        self.host = host if parts.port is None else f"{host}:{parts.port}"
        segments = tuple(s for s in parts.path.split("/") if len(s) >= 6)
        self._secrets = (self._url, parts.path, parts.query, *segments)

    def __repr__(self) -> str:
        """``WebhookNotifier('hooks.slack.com')``: never the URL."""
        return f"WebhookNotifier({self.host!r})"

    def _scrub(self, text: str) -> str:
        return scrub(redact(text), self._secrets)

    def target(self, message: Message) -> str | Skipped:
        """The webhook's host (its URL is a secret)."""
        return self.host

    async def send(self, message: Message) -> dict[str, Any]:
        """POST the message; what the webhook answered (Slack says ``ok``)."""
        where = f"webhook {self.host} ({self.source})"
        progress = _Progress()
        too_large = ""
        try:
            with _scrubbed_logs(self._secrets):
                request = self._client.build_request(
                    "POST",
                    self._url,
                    json={"text": slack_text(message)},
                    headers={"Idempotency-Key": message.key},
                    timeout=self._timeout,
                    extensions={"trace": progress.trace},
                )
                # One deadline for sending and reading the answer (a read timeout
                # bounds each read only); the answer is a few bytes ("ok").
                response = await exchange(
                    self._client, request, timeout=self._timeout, max_bytes=ERROR_BODY
                )
        except BodyTooLarge as exc:  # the status stands; the body is not read
            response = answered(exc.response, b"")
            too_large = f"(an answer {exc}, not read)"
        except TimeoutError:
            said = f"no answer within {self._timeout:g} s"
            if not progress.sending:  # nothing left this machine: sent again later
                raise NotifyUnavailable(f"{where} could not be reached: {said}") from None
            raise NotifyUnavailable(
                f"{where} did not answer after the message was sent: {said}", maybe_sent=True
            ) from None
        except _NOT_SENT as exc:  # nothing left this machine: sent again later
            said = self._scrub(f"{type(exc).__name__}: {exc}".rstrip(": "))
            raise NotifyUnavailable(f"{where} could not be reached: {said}") from None
        except httpx.HTTPError as exc:  # the POST may have arrived: never sent twice
            said = self._scrub(f"{type(exc).__name__}: {exc}".rstrip(": "))
            raise NotifyUnavailable(
                f"{where} did not answer after the message was sent: {said}", maybe_sent=True
            ) from None
        status = response.status_code
        said = too_large or self._scrub(" ".join(response.text.split())[:200]) or "(no body)"
        if 200 <= status < 300:
            return {"status": status, "answer": said}
        message_text = f"{where} answered {status}: {said}"
        if status == 429 or status >= 500:
            wait = response.headers.get("retry-after")
            suffix = f" (retry after {self._scrub(wait)} s)" if wait else ""
            raise NotifyUnavailable(message_text + suffix, status=status)
        if status in (401, 403):
            raise NotifyAuthError(
                message_text,
                tip=f"The webhook was refused: make a new one and put its URL in {self.source}.",
                status=status,
            )
        raise NotifyError(
            message_text,
            tip="404 and 410 mean the webhook or its channel is gone: make a new one.",
            status=status,
        )
