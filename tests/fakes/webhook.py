"""A Slack-compatible incoming webhook on 127.0.0.1 that records what it receives.

:class:`FakeWebhook` answers the way Slack documents its incoming webhooks
(https://api.slack.com/messaging/webhooks): a POST of JSON with a ``text`` to the secret
path is answered 200 ``ok`` (text/plain); a body that is not JSON 400 ``invalid_payload``
and one without text 400 ``no_text``; another path 404 ``no_service``
(https://api.slack.com/changelog/2016-05-17-changes-to-errors-for-incoming-webhooks).
Faults (429 with ``Retry-After``, 500 ``rollup_error``, 403 ``invalid_token``) are scripted
with :meth:`fakes.api.FakeServer.fail`. :attr:`FakeWebhook.on_message` is called with
each message right after it is recorded and before it is answered (with the server's
lock held): a test can kill the sender there, between its send and its record.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from fakes.api import FakeServer, Recorded, Reply

__all__ = ["FakeWebhook", "slack"]


def slack(status: int, text: str, headers: dict[str, str] | None = None) -> Reply:
    """An answer as Slack gives it: a short plain-text string."""
    return Reply(status, text.encode(), "text/plain; charset=utf-8", dict(headers or {}))


class FakeWebhook(FakeServer):
    """One incoming webhook at ``/services/T.../B.../<secret>``."""

    def __init__(self) -> None:
        super().__init__()
        self.secret = secrets.token_hex(12)
        self.path = f"/services/T0GOVERN/B0GOVERN/{self.secret}"
        self.messages: list[dict[str, Any]] = []  # the payloads accepted, in order
        self.on_message: Callable[[Recorded], None] | None = None

    @property
    def hook_url(self) -> str:
        """The webhook's URL, secret included (what the environment variable holds)."""
        return f"{self.url}{self.path}"

    def route(self, request: Recorded) -> Reply:
        if request.method != "POST" or request.path != self.path:
            return slack(404, "no_service")
        try:
            payload = json.loads(request.body)
        except ValueError:
            return slack(400, "invalid_payload")
        if not isinstance(payload, dict) or not payload.get("text"):
            return slack(400, "no_text")
        self.messages.append(payload)
        if self.on_message is not None:
            self.on_message(request)
        return slack(200, "ok")
