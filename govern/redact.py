"""Credentials hidden from messages, logs and pages: one set of rules for every part of govern.

URLs lose their userinfo and the values of query parameters named like secrets; secrets
known by value (a token from the environment or a netrc file) are replaced wherever they occur.
:class:`ConfiguredSecrets` holds what configuration names as secret (the variables, and the
forms of their values to scrub): a webhook's URL in ``SLACK_WEBHOOK_URL`` is hidden by its
value, whatever the variable is called.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

__all__ = [
    "SECRET_MIN",
    "SECRET_NAME",
    "ConfiguredSecrets",
    "redact",
    "redact_secret_params",
    "scrub",
    "secret_forms",
]

#: Names of environment variables that hold credentials whatever configuration says (CI
#: tokens, the forges' defaults, a chat webhook's URL).
SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|API_?KEY|CREDENTIAL|PRIVATE_KEY|WEBHOOK", re.IGNORECASE
)
#: Shorter values are not scrubbed out of texts: "dev" or "1234" would hide half a log.
SECRET_MIN = 6

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


def secret_forms(values: Iterable[str]) -> tuple[str, ...]:
    """The texts to scrub for each secret value, for :func:`scrub`.

    The value itself and its percent-encoded form; each line of a value of several lines
    (a PEM key, printed line by line or as ``repr`` shows it with ``\\n``); and the path and
    query of a URL (a webhook's token is its path, which a request log prints alone).
    Forms shorter than :data:`SECRET_MIN` are left out.
    """
    found: set[str] = set()
    for value in values:
        found.update({value, quote(value, safe=""), value.strip()})
        found.update(line.strip() for line in value.splitlines())
        if value.startswith(("http://", "https://")):
            try:
                parts = urlsplit(value)
            except ValueError:
                continue
            rest = parts.path + (f"?{parts.query}" if parts.query else "")
            if rest.strip("/"):
                found.add(rest)
    return tuple(sorted((s for s in found if len(s) >= SECRET_MIN), key=len, reverse=True))


@dataclass(frozen=True, slots=True)
class ConfiguredSecrets:
    """What configuration names as secret: the environment variables holding them (never
    handed to a verification command) and the forms of their values (scrubbed out of
    every stored log)."""

    variables: frozenset[str] = frozenset()
    values: tuple[str, ...] = field(default=(), repr=False)

    def hide(self, text: str) -> str:
        """``text`` with URL credentials redacted and every secret scrubbed."""
        return scrub(redact(text), self.values)
