"""``govern poll``: ask the index about every tracked exclusion, record releases and candidates."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from govern.cli import app
from govern.cli.track import DbOption, FormatOption, ViewFormat, _print_json

if TYPE_CHECKING:
    from govern.index.candidates import Profile
    from govern.index.model import FetchResult
    from govern.index.pipconfig import IndexSettings
    from govern.service.poll import PollResult
    from govern.store.dbapi import RawStore

IndexOption = Annotated[
    str | None,
    typer.Option(
        "--index-url",
        help="The Simple API root (else index-url in [tool.govern], else pip's configuration).",
        show_default=False,
    ),
]


ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="A .govern.toml to use instead of here.")
]


async def fetch_pages(
    settings: IndexSettings,
    names: list[str],
    on_done: Any = None,
) -> dict[str, FetchResult]:
    """Each package's page, fetched once, concurrently (for ``audit --online``)."""
    from govern.index.client import IndexClient, http_clients

    async with http_clients() as http:
        client = IndexClient(http, settings)
        return await client.fetch_many(names, {}, on_done=on_done)


async def _poll(
    store: RawStore,
    settings: IndexSettings,
    profiles: list[Profile],
    packages: Sequence[str],
    bar: Any,
) -> PollResult:
    from govern.index.client import IndexClient, http_clients
    from govern.service.poll import poll as run_poll

    def done(name: str, _result: FetchResult) -> None:
        if bar is not None:
            bar.update(1)

    async with http_clients() as http:
        client = IndexClient(http, settings)
        return await run_poll(store, client, profiles, packages=packages, on_done=done)


@contextlib.contextmanager
def _open_store(db: str | None, configured: str | None) -> Iterator[RawStore]:
    """The store, through sqlite3 alone when it is a SQLite file at the current schema.

    A poll needs no ORM (:mod:`govern.service.poll`); SQLAlchemy is loaded only for a
    store that needs it: PostgreSQL, a new or older SQLite file (created or migrated, or
    refused with the reason, by :class:`~govern.store.db.Store`).
    """
    from govern.store.dbapi import RawStore, open_sqlite
    from govern.store.location import resolve_url

    url = resolve_url(db, configured=configured)
    lean = open_sqlite(url)
    if lean is not None:
        with lean:
            yield lean
        return
    from govern.store.db import Store

    with Store(url) as store:
        yield RawStore.of(store)


@app.command()
def poll(
    package: Annotated[
        list[str] | None, typer.Option("--package", help="Only these packages (repeatable).")
    ] = None,
    profile: Annotated[
        list[str] | None,
        typer.Option("--profile", help="Only these runtime profiles (repeatable)."),
    ] = None,
    index_url: IndexOption = None,
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Ask the package index about every tracked exclusion: releases, candidates, and why not.

    One request per project, conditional (an unchanged project costs a 304). A project
    that cannot be fetched is recorded and changes nothing.
    """
    import asyncio  # here: asyncio (and ssl) would cost `govern audit` 25 ms at start-up

    from packaging.utils import canonicalize_name

    from govern.config import load_config
    from govern.index.settings import index_settings, profiles_from

    config = load_config(Path.cwd(), config_file)
    profiles = profiles_from(config, profile or ())
    settings = index_settings(config, index_url)
    packages = sorted({canonicalize_name(p) for p in package or ()})
    with _open_store(db, config.database) as store:
        bar: Any = None
        if sys.stderr.isatty() and fmt is ViewFormat.HUMAN:
            from govern.service.poll import watched

            with store.transaction() as tx:
                total = len({w.package for w in watched(tx, packages)})
            bar = typer.progressbar(length=total, label="polling", file=sys.stderr, show_pos=True)
            bar.__enter__()
        try:
            result = asyncio.run(_poll(store, settings, profiles, packages, bar))
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
    # The store is closed and committed: nothing is left to release but memory, which
    # the process's end frees at once (a 1,000-project poll spent 0.2 s freeing objects).
    from govern.cli import STATE

    STATE.fast_exit = True
    if fmt is ViewFormat.JSON:
        _print_json({"schema": "govern.poll/1", **result.as_dict()})
        return
    typer.echo(
        f"{result.projects} projects for {result.exclusions} exclusions: "
        f"{result.fetched} fetched, {result.not_modified} unchanged, {result.failed} failed; "
        f"{result.releases_new} new releases, {result.candidates_found} new candidates"
    )
    for found in result.found:
        typer.echo(
            f"  candidate: {found['package']} {found['version']} for {found['clause']} "
            f"(profile {found['profile']}, {found['role']})"
        )
    for package_name, reason in result.failures:
        typer.echo(f"  failed: {package_name}: {reason}", err=True)
