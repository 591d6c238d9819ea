"""Building the configured CI providers (``[tool.govern.ci.NAME]``) by their kind."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import httpx

from govern.ci import buildkite, command, github, gitlab
from govern.ci.base import Provider
from govern.ci.github import GitHubActions
from govern.ci.github_checks import GitHubChecks
from govern.ci.github_dispatch import GitHubDispatch
from govern.config import CIConfig


def build(
    config: CIConfig,
    *,
    http: httpx.AsyncClient,
    environ: Mapping[str, str],
    root: Path | None = None,
    withheld: Collection[str] = (),
) -> Provider:
    """The provider of one ``[tool.govern.ci.NAME]`` table; its keys are checked here
    (a ConfigError names the table and the key). ``withheld``: the variables holding
    secrets, never handed to a local command."""
    options = config.as_dict()
    if config.provider == "command":
        return command.from_config(config.name, options, root=root, withheld=withheld)
    if config.provider == "github-actions":
        return github_from_config(config.name, options, http=http, environ=environ)
    if config.provider == "buildkite":
        return buildkite.from_config(config.name, options, http=http, environ=environ)
    # the config allows no other kind
    return gitlab.from_config(config.name, options, http=http, environ=environ)


def github_from_config(
    name: str,
    options: Mapping[str, Any],
    *,
    http: httpx.AsyncClient,
    environ: Mapping[str, str],
) -> GitHubActions:
    """The GitHub Actions provider of a table, in the mode it names (dispatch by default)."""
    mode = github.mode_of(options, name)
    kind = GitHubChecks if mode == GitHubChecks.mode else GitHubDispatch
    return kind.from_table(name, options, http=http, environ=environ)


def github_actions(name: str, *, mode: str = "dispatch", **settings: Any) -> GitHubActions:
    """A GitHub Actions provider built directly, in ``mode`` ("dispatch" or "checks")."""
    if mode == GitHubChecks.mode:
        return GitHubChecks(name, **settings)
    if mode == GitHubDispatch.mode:
        return GitHubDispatch(name, **settings)
    raise ValueError(f"mode must be one of {', '.join(github.MODES)}, not {mode!r}")
