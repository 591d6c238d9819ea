"""Which forge and repository a git remote names, and the :class:`~govern.forge.base.Forge`
for it.

Notes: docs/internals.md#forge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from govern.config import ProposeConfig
from govern.errors import FORGE_ERRORS, ForgeAuthError, ForgeError
from govern.exclusions.states import Via
from govern.forge.base import Forge
from govern.forge.github import GitHubForge
from govern.forge.gitlab import GitLabForge
from govern.http.github import DEFAULT_ENV, github_api_url
from govern.http.gitlab import DEFAULT_ENV as GITLAB_ENV
from govern.http.gitlab import gitlab_api_url

if TYPE_CHECKING:
    from govern.http.github_app import AppTokens

__all__ = ["Remote", "forge_for", "parse_remote"]

_SCP = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>(?!/)[^\s]+)$")
_TIP = "Write the remote as git@host:owner/repo.git or https://host/owner/repo."


@dataclass(frozen=True, slots=True)
class Remote:
    """A remote's host (lower case, no port) and repository path (``owner/repo``,
    ``group/sub/project``; no ``.git``)."""

    host: str
    path: str


def parse_remote(url: str) -> Remote:
    """The host and repository path of a git remote URL (ForgeError when it names none)."""
    text = url.strip()
    if "://" in text:
        parts = urlsplit(text)
        host, path = parts.hostname or "", parts.path
    elif found := _SCP.match(text):
        host, path = found.group("host"), found.group("path")
    else:
        raise ForgeError(f"not a git remote URL with a repository: {_shown(text)}", tip=_TIP)
    path = path.strip("/").removesuffix(".git").strip("/")
    if not host or path.count("/") < 1 or any(not part for part in path.split("/")):
        raise ForgeError(f"not a git remote URL with a repository: {_shown(text)}", tip=_TIP)
    return Remote(host.lower(), path)


def _shown(url: str) -> str:
    """A URL for messages without the credentials it may hold."""
    return re.sub(r"//[^/@\s]+@", "//", url)


def forge_for(
    via: Via,
    remote_url: str | None,
    *,
    settings: ProposeConfig,
    client: httpx.AsyncClient,
    environ: Mapping[str, str],
) -> Forge:
    """The forge ``via`` names ("github", "gitlab") for the repository of ``remote_url``,
    or of the configured ``forge`` URL when given."""
    source = settings.forge or remote_url
    if not source:
        raise ForgeError(
            f"propose via {via} needs the repository: no remote URL and no forge URL",
            tip='Write forge = "https://host/owner/repo" in [tool.govern.propose].',
        )
    remote = parse_remote(source)
    if via == Via.GITHUB:
        if remote.path.count("/") != 1:
            raise ForgeError(f"a GitHub repository is owner/repo, not {remote.path!r}", tip=_TIP)
        variable = settings.token_env or DEFAULT_ENV
        api_url = settings.api_url or github_api_url(remote.host)
        return GitHubForge(
            remote.path,
            client,
            api_url=api_url,
            token=environ.get(variable) or None,
            token_source=f"${variable}",
            app=_app_tokens(settings, client, api_url, environ),
        )
    if via == Via.GITLAB:
        variable = settings.token_env or GITLAB_ENV
        return GitLabForge(
            remote.path,
            client,
            api_url=settings.api_url or gitlab_api_url(remote.host),
            token=environ.get(variable) or None,
            token_source=f"${variable}",
        )
    raise ForgeError(
        f"propose via {via!r} has no forge client",
        tip='Write via = "github" or via = "gitlab", or via = "git" to push the branch only.',
    )


def _app_tokens(
    settings: ProposeConfig, client: httpx.AsyncClient, api_url: str, environ: Mapping[str, str]
) -> AppTokens | None:
    """The GitHub App's installation tokens when the configuration names an app."""
    if settings.app_id is None or settings.installation_id is None:
        return None
    try:  # cryptography, installed for app users only
        from govern.http.github_app import AppTokens
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith(("cryptography", "govern.http.github_app")):
            raise
        raise ForgeError(
            "a GitHub App signs its token requests with RS256, which needs the cryptography "
            "package",
            tip="Install govern with the App's extra: pip install 'govern[github-app]'.",
        ) from None

    variable = settings.private_key_env or "GOVERN_APP_KEY"
    key = environ.get(variable)
    if not key:
        raise ForgeAuthError(
            f"${variable} is empty: the GitHub App's private key is read from it",
            tip=f"Export {variable} with the app's PEM private key (never write it in a file "
            "govern reads).",
        )
    return AppTokens(
        app_id=settings.app_id,
        installation_id=settings.installation_id,
        private_key=key,
        client=client,
        api_url=api_url,
        key_source=f"${variable}",
        errors=FORGE_ERRORS,
    )
