"""The dashboard's protections: headers, the write token, sessions, CSRF, webhook signatures.

Notes: docs/internals.md#web.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}
SESSION_COOKIE = "govern_session"
CSRF_COOKIE = "govern_csrf"
SESSION_SECONDS = 12 * 3600


@dataclass(frozen=True)
class Secrets:
    """The dashboard's secrets, read from the environment once at start."""

    token: str | None = field(default=None, repr=False)
    github_webhook_secret: str | None = field(default=None, repr=False)
    buildkite_webhook_token: str | None = field(default=None, repr=False)
    gitlab_webhook_token: str | None = field(default=None, repr=False)
    token_source: str = "$GOVERN_WEB_TOKEN"  # noqa: S105 -- a variable's name
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    # Signed-out sessions' nonces, each until its session would have expired anyway. In
    # memory, beside the key: a session is valid only in the process that signed it.
    revoked: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_environ(
        cls,
        environ: Mapping[str, str],
        *,
        token_env: str = "GOVERN_WEB_TOKEN",  # noqa: S107 -- a variable's name
        github_env: str = "GOVERN_GITHUB_WEBHOOK_SECRET",
        buildkite_env: str = "GOVERN_BUILDKITE_WEBHOOK_TOKEN",
        gitlab_env: str = "GOVERN_GITLAB_WEBHOOK_TOKEN",
    ) -> Secrets:
        """Secrets from the named variables (an empty variable counts as unset)."""
        return cls(
            token=environ.get(token_env) or None,
            github_webhook_secret=environ.get(github_env) or None,
            buildkite_webhook_token=environ.get(buildkite_env) or None,
            gitlab_webhook_token=environ.get(gitlab_env) or None,
            token_source=f"${token_env}",
        )

    # -- the write token --------------------------------------------------------------------

    @property
    def writable(self) -> bool:
        """True when a write token is configured (else the dashboard is read-only)."""
        return self.token is not None

    def token_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the write token (constant time)."""
        if self.token is None or not given:
            return False
        return hmac.compare_digest(given.encode(), self.token.encode())

    def bearer_ok(self, authorization: str | None) -> bool:
        """Whether an ``Authorization: Bearer`` header carries the write token."""
        if not authorization:
            return False
        scheme, _, value = authorization.partition(" ")
        return scheme.lower() == "bearer" and self.token_ok(value.strip())

    # -- sessions and CSRF ------------------------------------------------------------------

    def _sign(self, purpose: str, value: str) -> str:
        message = f"{purpose}:{value}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def new_session(self, now: float | None = None) -> str:
        """A signed session value: ``<issued>.<nonce>.<mac>``."""
        issued = str(int(now if now is not None else time.time()))
        nonce = secrets.token_urlsafe(16)
        return f"{issued}.{nonce}.{self._sign('session', f'{issued}.{nonce}')}"

    def session_ok(self, value: str | None, now: float | None = None) -> bool:
        """Whether a session cookie is one we signed, and not expired."""
        if not value or self.token is None:
            return False
        parts = value.split(".")
        if len(parts) != 3 or not parts[0].isdigit():
            return False
        issued, nonce, mac = parts
        expected = self._sign("session", f"{issued}.{nonce}")
        if not hmac.compare_digest(mac.encode(), expected.encode()):
            return False
        age = (now if now is not None else time.time()) - int(issued)
        return 0 <= age <= SESSION_SECONDS and nonce not in self.revoked

    def revoke(self, value: str | None, now: float | None = None) -> bool:
        """End a session (sign-out): its cookie is refused from now on. False: not one."""
        if value is None or not self.session_ok(value, now):
            return False
        issued, nonce, _ = value.split(".")
        moment = now if now is not None else time.time()
        for old, until in list(self.revoked.items()):  # forget what has expired anyway
            if until < moment:
                del self.revoked[old]
        self.revoked[nonce] = int(issued) + SESSION_SECONDS
        return True

    @staticmethod
    def new_nonce() -> str:
        """A random value for the CSRF cookie."""
        return secrets.token_urlsafe(24)

    def csrf_token(self, nonce: str) -> str:
        """The form token that goes with a CSRF cookie nonce."""
        return self._sign("csrf", nonce)

    def csrf_ok(self, nonce: str | None, token: str | None) -> bool:
        """Whether a form's token matches its cookie (constant time)."""
        if not nonce or not token:
            return False
        return hmac.compare_digest(token.encode(), self.csrf_token(nonce).encode())

    # -- webhooks ---------------------------------------------------------------------------

    def github_signature_ok(self, body: bytes, header: str | None) -> bool:
        """GitHub's ``X-Hub-Signature-256: sha256=<hex>`` over the raw body."""
        if self.github_webhook_secret is None or not header or not header.startswith("sha256="):
            return False
        digest = hmac.new(self.github_webhook_secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(header.removeprefix("sha256=").encode(), digest.encode())

    def buildkite_token_ok(self, header: str | None) -> bool:
        """Buildkite's ``X-Buildkite-Token`` (the webhook's token, sent as is)."""
        return _same(header, self.buildkite_webhook_token)

    def gitlab_token_ok(self, header: str | None) -> bool:
        """GitLab's ``X-Gitlab-Token`` (the webhook's secret token, sent as is)."""
        return _same(header, self.gitlab_webhook_token)


def _same(given: str | None, expected: str | None) -> bool:
    """A token header against the configured one, in constant time (none configured: no)."""
    if expected is None or not given:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP answer."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app
        self._headers = [(k.encode(), v.encode()) for k, v in HEADERS.items()]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                headers = list(message.get("headers", []))
                headers += [(k, v) for k, v in self._headers if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)
