"""GitHub App installation tokens: an RS256 JWT signed with the app's private key is
exchanged for an installation's token, which is cached until shortly before it expires.
Its errors are the caller's family (the forge's, ``FORGE_ERRORS``). This module alone needs
``cryptography`` (the ``github-app`` extra): it is imported only when an App is configured.

https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from govern.errors import ErrorFamily
from govern.http.github import github_client

__all__ = ["AppTokens", "b64url"]

_MARGIN = timedelta(minutes=1)  # a token this close to its expiry is renewed


def b64url(data: bytes) -> str:
    """Base64url without padding, as JWTs write it."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _now() -> datetime:
    return datetime.now(UTC)


class AppTokens:
    """An installation's tokens for one GitHub App, renewed when they expire."""

    def __init__(
        self,
        *,
        app_id: str,
        installation_id: int,
        private_key: str,
        client: httpx.AsyncClient,
        api_url: str,
        key_source: str,
        errors: ErrorFamily,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        """``private_key`` is the app's PEM key (from the variable ``key_source`` names);
        ``errors`` is the family raised (a refused key is its ``auth``)."""
        self._errors = errors
        try:
            key = serialization.load_pem_private_key(private_key.encode(), password=None)
        except (ValueError, TypeError):
            raise errors.auth(f"{key_source} does not hold a PEM private key") from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise errors.auth(f"{key_source} holds a key that is not RSA (GitHub signs RS256)")
        self._key = key
        self.app_id = app_id
        self.installation_id = installation_id
        self._client = client
        self._api_url = api_url
        self._key_source = key_source
        self._clock = clock
        self._cached: tuple[str, datetime] | None = None

    def jwt(self) -> str:
        """A JWT for the app: issued a minute ago (clock drift), valid nine minutes."""
        now = int(self._clock().timestamp())
        header = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
        claims = {"iat": now - 60, "exp": now + 540, "iss": self.app_id}
        payload = b64url(json.dumps(claims).encode())
        signing = f"{header}.{payload}".encode()
        signature = self._key.sign(signing, padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{b64url(signature)}"

    async def token(self) -> str:
        """The installation's token, asked for again when it expires within a minute."""
        if self._cached is not None and self._cached[1] - _MARGIN > self._clock():
            return self._cached[0]
        jwt = self.jwt()
        api = github_client(
            self._client,
            token=jwt,
            token_source=f"the app's JWT (key in {self._key_source})",
            errors=self._errors,
            api_url=self._api_url,
            clock=self._clock,
        )
        answer = await api.json(
            "POST", f"/app/installations/{self.installation_id}/access_tokens", attempts=1
        )
        token = answer.get("token") if isinstance(answer, dict) else None
        expires = answer.get("expires_at") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not isinstance(expires, str):
            raise self._errors.unavailable(
                "github: unexpected answer to an installation token request"
            )
        try:
            until = datetime.fromisoformat(expires.replace("Z", "+00:00"))
        except ValueError:
            raise self._errors.unavailable(
                "github: an installation token's expires_at is no time"
            ) from None
        self._cached = (token, until)
        return token
