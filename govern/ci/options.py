"""Validation of a ``[tool.govern.ci.NAME]`` table, shared by the hosted providers.

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, TypedDict
from urllib.parse import urlsplit

from govern.errors import ConfigError
from govern.tomltables import choice as table_choice
from govern.tomltables import known_keys, names, show
from govern.tomltables import string as table_string

#: keys every provider table accepts
COMMON_KEYS = frozenset({"provider", "token-env", "api-url", "timeout"})
#: the longest run a timeout allows (seconds): seven days
MAX_TIMEOUT = 7 * 86400

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_SECRET_KEYS = frozenset({"token", "api-token", "access-token", "private-token", "password"})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class Connection(TypedDict):
    """How a hosted provider reaches its vendor: what :func:`connection` read."""

    token: str
    token_source: str  # "$VARIABLE", for messages
    api_url: str
    timeout: float


def where(name: str) -> str:
    """``[tool.govern.ci.NAME]``: how messages name a provider's table."""
    return f"[tool.govern.ci.{names({name})}]"


def check_keys(options: Mapping[str, Any], allowed: Collection[str], name: str) -> None:
    """Refuse a secret written into the table, then any key not in ``allowed``."""
    table = where(name)
    secrets = sorted(k for k in options if isinstance(k, str) and k.lower() in _SECRET_KEYS)
    if secrets:
        raise ConfigError(
            f"{table}: {secrets[0]} must not be written in the configuration: the table"
            " holds a token, and a token must never sit in a committed file",
            tip="Remove it, revoke it, and name the variable that holds it:"
            ' token-env = "VARIABLE".',
        )
    known_keys(
        options,
        allowed,
        table,
        tip=f"Known keys: {', '.join(sorted(allowed))}; keys are written with hyphens"
        " (token-env, api-url).",
    )


def check_provider(options: Mapping[str, Any], kind: str, name: str) -> None:
    """``provider``, when given, must name this provider's kind."""
    if "provider" in options and options["provider"] != kind:
        raise ConfigError(
            f"{where(name)}: provider is {show(options['provider'])},"
            f" but this table is read as {kind!r}",
            tip=f'Write provider = "{kind}".',
        )


def string(options: Mapping[str, Any], key: str, name: str, *, default: str | None = None) -> str:
    """A non-empty string option; ``default`` when absent (absent without one: an error)."""
    value = table_string(options, key, where(name))
    if value is None:
        if default is None:
            raise ConfigError(
                f"{where(name)}: {key} is required",
                tip=f'Add {key} = "..." to the table.',
            )
        return default
    if not value.strip() or not value.isprintable():
        raise ConfigError(
            f"{where(name)}: {key} must be a non-empty string on one line",
            tip=f'Write it as {key} = "...".',
        )
    return value


def slug(options: Mapping[str, Any], key: str, name: str) -> str:
    """A required URL slug (letters, digits, ``.``, ``_``, ``-``): safe in a URL path."""
    value = string(options, key, name)
    if not _SLUG.match(value) or value in {".", ".."}:
        raise ConfigError(
            f"{where(name)}: {key} {value[:60]!r} is not a slug"
            " (letters, digits, '.', '_' and '-')",
            tip=f"Copy the {key} slug from the provider's URL.",
        )
    return value


def choice(options: Mapping[str, Any], key: str, name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``; the first one when absent."""
    return table_choice(options, key, where(name), choices, choices[0])


def api_url(options: Mapping[str, Any], name: str, default: str) -> str:
    """``api-url``: an https:// URL (http:// on this machine only), without credentials
    or query string; returned without a trailing slash."""
    value = string(options, "api-url", name, default=default)
    tip = f'Write the API root, e.g. api-url = "{default}".'
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ConfigError(
            f"{where(name)}: api-url is not an https:// URL (nor an http:// one on this"
            f" machine): {show(value)}",
            tip=tip,
        )
    if parts.username is not None or parts.password is not None or parts.query:
        raise ConfigError(
            f"{where(name)}: api-url must be a URL without credentials or query string"
            " (the token comes from token-env)",
            tip=tip,
        )
    if parts.scheme == "http" and host not in _LOOPBACK:
        raise ConfigError(
            f"{where(name)}: api-url {show(value)} is plain http: the token would travel"
            " unencrypted",
            tip=tip,
        )
    return value.rstrip("/")


def timeout(options: Mapping[str, Any], name: str, default: float = 3600.0) -> float:
    """``timeout``: seconds one run may take, from 1 to :data:`MAX_TIMEOUT`."""
    value = options.get("timeout", default)
    tip = "Write it as a number, without quotes: timeout = 3600."
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        shown = str(value) if isinstance(value, int | float) else show(value)
        raise ConfigError(
            f"{where(name)}: timeout must be a positive number of seconds, not {shown}",
            tip=tip,
        )
    if not 1 <= value <= MAX_TIMEOUT:
        raise ConfigError(
            f"{where(name)}: timeout must be from 1 to {MAX_TIMEOUT} seconds (seven days),"
            f" not {value}",
            tip=tip,
        )
    return float(value)


def env_name(options: Mapping[str, Any], key: str, name: str, default: str) -> str:
    """An option naming an environment variable (``token-env``)."""
    value = string(options, key, name, default=default)
    if not _ENV_NAME.match(value):
        raise ConfigError(
            f"{where(name)}: {key} must be the name of an environment variable"
            " (letters, digits, _), not the token itself",
            tip=f'Write the variable\'s name, e.g. {key} = "{default}".',
        )
    return value


def token_from_env(
    environ: Mapping[str, str], variable: str, name: str, *, needs: str | None = None
) -> str:
    """The token held by ``variable``; a missing or empty one is an error naming it.

    ``needs`` says what the token must be allowed to do, for the tip.
    """
    value = environ.get(variable, "")
    if not value.strip():
        state = "is empty" if variable in environ else "is not set"
        permission = f" It needs {needs}." if needs else ""
        raise ConfigError(
            f"{where(name)}: the environment variable {variable} {state};"
            " it must hold the API token",
            tip=f"Export {variable} (from your CI secrets) before running govern verify."
            + permission,
        )
    return value.strip()


def connection(
    options: Mapping[str, Any],
    environ: Mapping[str, str],
    name: str,
    *,
    default_url: str,
    default_variable: str,
    needs: str,
) -> Connection:
    """The keys every hosted provider reads: ``api-url``, ``timeout``, and the token in the
    variable ``token-env`` names (``needs``: what the token must be allowed to do)."""
    url = api_url(options, name, default_url)
    seconds = timeout(options, name)
    variable = env_name(options, "token-env", name, default_variable)
    token = token_from_env(environ, variable, name, needs=needs)
    return Connection(token=token, token_source=f"${variable}", api_url=url, timeout=seconds)
