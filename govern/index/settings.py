"""From configuration to the watcher's inputs: runtime profiles and the index to ask."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from packaging.version import Version

from govern.config import Config

if TYPE_CHECKING:
    from govern.index.pipconfig import IndexSettings
    from govern.index.profiles import Profile


def profiles_from(config: Config, names: Sequence[str] = ()) -> list[Profile]:
    """The configured runtime profiles (``names`` picks some), or one for this machine.

    A profile's own ``allow-prereleases``, ``allow-sdist`` and ``minimum-release-age``
    win over the top-level settings.
    """
    from govern.errors import UsageError
    from govern.index.profiles import Profile

    if not config.profiles:
        if names and set(names) != {"default"}:
            raise UsageError(
                f"no runtime profile {', '.join(names)} is configured",
                tip="Define it under [tool.govern.profiles.NAME] (python, platforms, ...).",
            )
        return [
            Profile(
                name="default",
                allow_prereleases=config.allow_prereleases,
                allow_sdist=config.allow_sdist,
                minimum_release_age=timedelta(days=config.minimum_release_age),
            )
        ]
    chosen = [p for p in config.profiles if not names or p.name in names]
    unknown = set(names) - {p.name for p in config.profiles}
    if unknown:
        raise UsageError(
            f"no runtime profile {', '.join(sorted(unknown))} is configured",
            tip=f"Configured: {', '.join(p.name for p in config.profiles)}.",
        )
    return [
        Profile(
            name=p.name,
            python=Version(p.python) if p.python else None,
            platforms=p.platforms,
            implementation=p.implementation,
            markers=dict(p.markers),
            allow_prereleases=(
                config.allow_prereleases if p.allow_prereleases is None else p.allow_prereleases
            ),
            allow_sdist=config.allow_sdist if p.allow_sdist is None else p.allow_sdist,
            minimum_release_age=timedelta(
                days=config.minimum_release_age
                if p.minimum_release_age is None
                else p.minimum_release_age
            ),
        )
        for p in chosen
    ]


def index_settings(config: Config, cli_index_url: str | None = None) -> IndexSettings:
    """The index to ask: ``--index-url``, else configuration, else pip's own settings,
    else the index the installed pip asks by default (source ``pip's default``)."""
    from govern.index import pipconfig

    return pipconfig.resolve_indexes(
        cli_index_url=cli_index_url,
        configured_index_url=config.index_url,
        configured_extra=config.extra_index_urls,
        per_package=dict(config.indexes),
        pip_default=pipconfig.pip_default_index,  # looked up now: tests replace it
        trusted_redirects=config.trusted_redirects,
    )
