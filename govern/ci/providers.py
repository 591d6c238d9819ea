"""Building the configured CI providers (``[tool.govern.ci.NAME]``) by their kind."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from govern.ci.base import Provider
from govern.config import CIConfig

if TYPE_CHECKING:
    import httpx


def build(
    config: CIConfig,
    *,
    http: httpx.AsyncClient,
    environ: Mapping[str, str],
    root: Path | None = None,
) -> Provider:
    """The provider of one ``[tool.govern.ci.NAME]`` table; its keys are checked here
    (a ConfigError names the table and the key)."""
    options = config.as_dict()
    if config.provider == "command":
        from govern.ci.command import from_config as command

        return command(config.name, options, root=root)
    if config.provider == "github-actions":
        from govern.ci.github import from_config as github

        return github(config.name, options, http=http, environ=environ)
    if config.provider == "buildkite":
        from govern.ci.buildkite import from_config as buildkite

        return buildkite(config.name, options, http=http, environ=environ)
    from govern.ci.gitlab import from_config as gitlab  # the config allows no other kind

    return gitlab(config.name, options, http=http, environ=environ)
