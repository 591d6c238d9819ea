"""Which forge and repository a git remote names, and the :class:`~govern.forge.base.Forge`
for it.

:func:`parse_remote` reads the remote URL forms git takes (``git@host:owner/repo.git``,
``https://host/owner/repo(.git)``, ``ssh://git@host:port/group/sub/project.git``), with
any credentials in the URL dropped. :func:`forge_for` builds the forge of ``via`` for it:
the repository from the remote (or from the configured ``forge`` URL), the API from
``api-url`` (GitHub Enterprise, tests) or the host's usual one, the token from the
environment variable ``token-env`` names. GitLab is not built here yet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from govern.config import ProposeConfig
from govern.forge.base import Forge, ForgeError
from govern.forge.github import API_URL, DEFAULT_ENV, GitHubForge

__all__ = ["Remote", "forge_for", "github_api_url", "parse_remote"]

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


def github_api_url(host: str) -> str:
    """GitHub's REST API root for a host: its public API, else Enterprise's ``/api/v3``."""
    return API_URL if host in ("github.com", "www.github.com") else f"https://{host}/api/v3"


def forge_for(
    via: str,
    remote_url: str | None,
    *,
    settings: ProposeConfig,
    client: httpx.AsyncClient,
    environ: Mapping[str, str],
) -> Forge:
    """The forge ``via`` names ("github") for the repository of ``remote_url``, or of the
    configured ``forge`` URL when given."""
    source = settings.forge or remote_url
    if not source:
        raise ForgeError(
            f"propose via {via} needs the repository: no remote URL and no forge URL",
            tip='Write forge = "https://host/owner/repo" in [tool.govern.propose].',
        )
    remote = parse_remote(source)
    if via == "github":
        if remote.path.count("/") != 1:
            raise ForgeError(f"a GitHub repository is owner/repo, not {remote.path!r}", tip=_TIP)
        variable = settings.token_env or DEFAULT_ENV
        return GitHubForge(
            remote.path,
            client,
            api_url=settings.api_url or github_api_url(remote.host),
            token=environ.get(variable) or None,
            token_source=f"${variable}",
        )
    raise ForgeError(
        f"propose via {via!r} has no forge client yet",
        tip='Write via = "github", or via = "git" to push the branch only.',
    )
