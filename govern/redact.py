"""Credentials hidden from messages, logs and pages: one set of rules for every part of govern.

URLs lose their userinfo and the values of query parameters named like secrets; secrets
known by value (a token from the environment or a netrc file) are replaced wherever they occur.
"""

from __future__ import annotations

import re

__all__ = ["redact", "redact_secret_params", "scrub"]

# userinfo runs to the last "@" before the host's path ("u:p@ss@host" is one userinfo).
_USERINFO_RE = re.compile(r"(://)[^/?#\s]*@")
# A query parameter whose name says it is a secret: ?token=..., &password=..., &X-Amz-Signature=...
_SECRET_PARAM_RE = re.compile(
    r"([?&][^=&#\s]*(?:pass|token|secret|key|auth|sig)[^=&#\s]*=)[^&#\s]*", re.IGNORECASE
)


def redact(text: str) -> str:
    """Hide credentials in URLs (``https://user:token@host`` -> ``https://***@host``), and
    the values of query parameters named like secrets (``?token=...`` -> ``?token=***``)."""
    return redact_secret_params(_USERINFO_RE.sub(r"\1***@", text))


def redact_secret_params(text: str) -> str:
    """The values of query parameters named like secrets hidden (``?token=...`` ->
    ``?token=***``), for a URL whose userinfo is shown otherwise (a database's user)."""
    return _SECRET_PARAM_RE.sub(r"\1***", text)


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each secret (longest first) replaced by ``***``."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
