"""``govern verify``: try current candidates on their runtime profiles through CI."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from govern.cli.app import app
from govern.cli.options import (
    ConfigOption,
    DbOption,
    FormatOption,
    IndexOption,
)
from govern.cli.output import ViewFormat
from govern.cli.output import print_json as _print_json
from govern.errors import UsageError

if TYPE_CHECKING:
    import httpx

    from govern.ci.base import Provider
    from govern.config import Config
    from govern.index.pipconfig import IndexSettings
    from govern.service.verify import VerifyResult
    from govern.store.db import Store

_ADHOC = "command"  # the name of the provider that --command makes


def _providers(
    config: Config,
    http: httpx.AsyncClient,
    command: str | None,
    isolated: bool,
    timeout: float | None,
) -> tuple[dict[str, Provider], Any]:
    """Every configured provider by name, and the function that picks one per profile."""
    from govern.ci.command import Command
    from govern.ci.providers import build
    from govern.errors import ConfigError

    root = config.path.parent if config.path is not None else Path.cwd()
    ad_hoc = command is not None or isolated
    providers: dict[str, Provider] = {}
    for ci in config.ci:
        try:
            providers[ci.name] = build(ci, http=http, environ=os.environ, root=root)
        except ConfigError:
            if not ad_hoc:
                raise
            # An ad hoc run needs none of the configured providers (a hosted one may lack
            # its token here); their runs still going wait for a call that can reach them.
    if ad_hoc and _ADHOC in providers:
        raise UsageError(
            f"a configured provider is named {_ADHOC!r}, the name --command and --isolated use",
            tip=f"Rename [tool.govern.ci.{_ADHOC}] (its runs would be mistaken for ad hoc ones).",
        )
    adhoc: Provider | None = None
    if command is not None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"--command {command!r} cannot be split: {exc}") from None
        if not argv:
            raise UsageError("--command is empty", tip="Give the check to run, e.g. 'pytest -x'.")
        adhoc = Command(
            _ADHOC, command=argv, isolated=isolated, timeout=timeout or 3600.0, workdir=root
        )
        providers[_ADHOC] = adhoc
    elif isolated:
        adhoc = Command(_ADHOC, isolated=True, timeout=timeout or 3600.0, workdir=root)
        providers[_ADHOC] = adhoc
    by_profile = {p.name: p.ci for p in config.profiles}

    def provider_for(profile: str) -> Provider | None:
        if adhoc is not None:
            return adhoc
        name = by_profile.get(profile) or config.verify_with
        return providers.get(name) if name else None

    return providers, provider_for


async def verify_once(
    store: Store,
    config: Config,
    settings: IndexSettings | None,
    query: str | None,
    profiles: list[str],
    command: str | None,
    isolated: bool,
    timeout: float | None,
    wait: bool,
    wait_timeout: float,
    poll_interval: float,
) -> VerifyResult:
    """One verification call: new candidates' runs started, runs still going collected."""
    from govern.index.lean import httpx
    from govern.service.verify import Verifier

    async with httpx.AsyncClient(timeout=30.0, follow_redirects=False) as http:
        providers, provider_for = _providers(config, http, command, isolated, timeout)
        if not providers:
            raise UsageError(
                "no CI provider to verify with",
                tip="Give --command '...' (with --isolated for a fresh venv), or configure "
                '[tool.govern.ci.NAME] with provider = "command" (or github-actions, '
                "buildkite, gitlab) and verify-with = NAME.",
            )
        verifier = Verifier(
            store,
            provider_for=provider_for,
            providers=providers,
            index=settings,
            attempts=config.verify_attempts,
        )
        return await verifier.run(
            query,
            profiles=profiles,
            wait=wait,
            poll_interval=poll_interval,
            deadline=wait_timeout,
        )


@app.command()
def verify(
    query: Annotated[
        str | None,
        typer.Argument(help="An exclusion id or a package (default: every exclusion)."),
    ] = None,
    profile: Annotated[
        list[str] | None,
        typer.Option("--profile", help="Only these runtime profiles (repeatable)."),
    ] = None,
    command: Annotated[
        str | None,
        typer.Option(
            "--command",
            help="Run this check (an argv, split like a shell would, run without one); "
            "{package}, {version}, {requirement}, {constraints}, {profile}, {python}.",
            show_default=False,
        ),
    ] = None,
    isolated: Annotated[
        bool,
        typer.Option(
            "--isolated",
            help="Install the candidate into a fresh venv from the index and check there.",
        ),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds one --command run may take.", min=1),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="Poll hosted CI runs until they end (else: next call)."),
    ] = False,
    wait_timeout: Annotated[
        float, typer.Option("--wait-timeout", help="With --wait: give up after (s).", min=1)
    ] = 3600.0,
    poll_interval: Annotated[
        float, typer.Option("--poll-interval", help="With --wait: seconds between polls.", min=0)
    ] = 15.0,
    index_url: IndexOption = None,
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Try each current candidate on its runtime profile through CI, and record the result.

    A pass needs evidence that the candidate was installed. A failure makes the version
    known-bad; errored, cancelled and timed-out runs are retried and never count.
    Exit 0 when every run ended without a failure (or is still running), 1 when a
    candidate failed, 2 when verification could not be done (no provider, a token refused).
    """
    import asyncio

    from govern.cli.poll import announce_index
    from govern.config import load_config
    from govern.index.pipconfig import IndexNotConfigured
    from govern.index.settings import index_settings
    from govern.store.db import open_store

    config = load_config(Path.cwd(), config_file)
    try:
        settings: IndexSettings | None = index_settings(config, index_url)
    except IndexNotConfigured:  # no index configured, and no pip to ask for its default
        if isolated:
            raise
        settings = None  # only an isolated install needs the index
    if settings is not None:
        announce_index(settings)
    with open_store(db, configured=config.database) as store:
        result = asyncio.run(
            verify_once(
                store,
                config,
                settings,
                query,
                profile or [],
                command,
                isolated,
                timeout,
                wait,
                wait_timeout,
                poll_interval,
            )
        )
    if fmt is ViewFormat.JSON:
        _print_json({"schema": "govern.verify/1", **result.as_dict()})
    else:
        _print_human(result)
    if result.auth_failed:
        from govern.errors import GovernError

        raise GovernError(result.errors[0], tip="No run was counted as a pass or a fail.")
    if result.concluded.get("failed"):
        raise typer.Exit(1)


def _print_human(result: VerifyResult) -> None:
    from govern.output.human import one_line, truncate

    for run in result.runs:
        installed = f", installed {run['installed']}" if run["installed"] else ""
        where = f"  {run['run_url']}" if run["run_url"] else ""
        typer.echo(
            f"{run['conclusion']:<9}  {run['package']} {run['version']} on {run['profile']} "
            f"({run['provider']}, attempt {run['attempt']}{installed}){where}"
        )
        if run["detail"]:
            typer.echo(f"           {truncate(one_line(run['detail']), 200)}")
    for skipped in result.skipped:
        what = " ".join(filter(None, (skipped.get("package"), skipped.get("version"))))
        typer.echo(f"skipped    {what} on {skipped.get('profile')}: {skipped['reason']}")
    counts = ", ".join(f"{n} {c}" for c, n in sorted(result.concluded.items()) if n)
    typer.echo(
        f"{result.started} run(s) started, {result.running} still running"
        + (f"; {counts}" if counts else "")
    )
    for error in result.errors:
        typer.echo(f"  error: {truncate(one_line(error), 300)}", err=True)
