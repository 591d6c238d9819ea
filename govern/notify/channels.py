"""A repository's channels, built from ``[tool.govern.notify]`` and the environment.

The secrets (the webhook's URL, the SMTP user and password) are read here from the
variables the configuration names, and handed to the channels; a variable that is not
set is a :class:`~govern.errors.ConfigError` naming the variable, never its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import httpx

from govern.config import NotifyConfig
from govern.errors import ConfigError
from govern.forge.base import Forge
from govern.notify.base import Notifier
from govern.notify.email import EmailNotifier
from govern.notify.issue import IssueNotifier
from govern.notify.webhook import WebhookNotifier

__all__ = ["build"]


def _secret(environ: Mapping[str, str], variable: str, what: str, key: str) -> str:
    value = environ.get(variable)
    if not value:
        raise ConfigError(
            f"${variable} is not set: it should hold {what} ([tool.govern.notify] {key})",
            tip=f"Set {variable} in the environment govern runs in (never in a file).",
        )
    return value


def build(
    settings: NotifyConfig,
    *,
    http: httpx.AsyncClient,
    environ: Mapping[str, str],
    forge: Forge | None,
    host: str = "",
    why_no_forge: str = "no forge is configured",
    base: Path | None = None,
) -> list[Notifier]:
    """The channels of ``settings``, in their configured order.

    ``forge`` and ``host`` are the repository's forge and its web host, for the issue
    channel (``forge`` None: ``why_no_forge`` is what reminders say instead); ``base``
    is where a relative ``cafile`` is read from (the configuration's directory).
    """
    out: list[Notifier] = []
    for channel in settings.channels:
        if channel == "issue":
            out.append(IssueNotifier(forge, host=host, why_not=why_no_forge))
        elif channel == "webhook":
            variable = settings.webhook_url_env or ""
            url = _secret(environ, variable, "the webhook's URL", "webhook-url-env")
            out.append(WebhookNotifier(url, http, source=f"${variable}"))
        elif channel == "email":
            user = password = None
            if settings.smtp_user_env and settings.smtp_password_env:
                user = _secret(environ, settings.smtp_user_env, "the SMTP user", "smtp-user-env")
                password = _secret(
                    environ, settings.smtp_password_env, "the SMTP password", "smtp-password-env"
                )
            cafile = settings.cafile
            if cafile is not None and base is not None:
                cafile = str(base / cafile)
            out.append(
                EmailNotifier(
                    host=settings.smtp_host or "",
                    port=settings.smtp_port,
                    sender=settings.smtp_from or "",
                    recipients=settings.smtp_to,
                    user=user,
                    password=password,
                    starttls=settings.starttls,
                    implicit_tls=settings.smtp_tls == "implicit",
                    cafile=cafile,
                )
            )
    return out
