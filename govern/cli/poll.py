"""``govern poll``: ask the index about every tracked exclusion, record releases and candidates.

The one command that parses its own options (:mod:`argparse`), so that a poll loads
neither Typer nor the other commands: a poll of 50 projects takes about 0.2 s, and
they were a fifth of it (``bench/poll.py``). ``govern poll`` reaches :func:`poll_main`
from :func:`govern.cli.main` directly, and through the Typer application when a global
option comes first (``govern --debug poll``). The options follow the other commands'
(``--db``, ``--config``, ``--index-url``, ``--format/-f``); a test holds them to it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from govern.cli.output import ViewFormat, print_json

if TYPE_CHECKING:
    from govern.index.candidates import Profile
    from govern.index.model import FetchResult
    from govern.index.pipconfig import IndexSettings
    from govern.service.poll import PollResult
    from govern.store.dbapi import RawStore

SUMMARY = "Ask the package index about every tracked exclusion: releases, candidates, and why not."


def announce_index(settings: IndexSettings) -> None:
    """Say on stderr which index is asked, when nothing configured one (pip's default)."""
    from govern.index.pipconfig import PIP_DEFAULT
    from govern.redact import redact as redact_url

    if settings.source == PIP_DEFAULT:
        print(f"index: {redact_url(settings.index_url)} ({PIP_DEFAULT})", file=sys.stderr)


async def fetch_pages(
    settings: IndexSettings,
    names: list[str],
    on_done: Any = None,
) -> dict[str, FetchResult]:
    """Each package's page, fetched once, concurrently (for ``audit --online``)."""
    from govern.index.ondemand import OnDemandClient

    announce_index(settings)
    async with OnDemandClient(settings) as client:
        return await client.fetch_many(names, {}, on_done=on_done)


async def _poll(
    store: RawStore,
    settings: IndexSettings,
    profiles: list[Profile],
    packages: Sequence[str],
    bar: Any,
    refresh: bool = False,
) -> PollResult:
    from govern.index.ondemand import OnDemandClient
    from govern.service.poll import poll as run_poll

    def done(name: str, _result: FetchResult) -> None:
        if bar is not None:
            bar.update(1)

    # Opened at the first fetch: a poll whose every page is still fresh loads no HTTP code.
    async with OnDemandClient(settings) as client:
        return await run_poll(
            store, client, profiles, packages=packages, on_done=done, refresh=refresh
        )


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


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors ended as the other commands end them (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"govern poll: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    """``govern poll``'s options."""
    made = _Parser(
        prog="govern poll",
        allow_abbrev=False,  # as Typer: --pack is not --package
        description=SUMMARY
        + " One request per project, conditional (an unchanged project costs a 304)."
        " A project that cannot be fetched is recorded and changes nothing.",
    )
    made.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="NAME",
        help="Only these packages (repeatable).",
    )
    made.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="Only these runtime profiles (repeatable).",
    )
    made.add_argument(
        "--refresh",
        action="store_true",
        help="Ask the index about every project, even one whose last answer is still fresh "
        "(the index's Cache-Control max-age, an hour at most).",
    )
    made.add_argument(
        "--index-url",
        metavar="URL",
        help="The Simple API root (else index-url in [tool.govern], else pip's configuration).",
    )
    made.add_argument(
        "--config", type=Path, metavar="PATH", help="A .govern.toml to use instead of here."
    )
    made.add_argument(
        "--db",
        metavar="URL",
        help="Database URL or SQLite file (else GOVERN_DATABASE_URL, else `database` in "
        "[tool.govern], else SQLite in the user's data directory).",
    )
    made.add_argument(
        "--format",
        "-f",
        dest="fmt",
        type=ViewFormat,
        choices=list(ViewFormat),
        default=ViewFormat.HUMAN,
        help="Output format (default: human).",
    )
    return made


def poll_main(argv: Sequence[str]) -> NoReturn:
    """``govern poll [options]``: parse, poll, report, and exit.

    0 when the poll read the index (some projects may have failed: each is reported and
    recorded); 2 when the run could not be done, including a poll in which every project
    asked failed (after the report: the failures are in it and in the store).
    """
    options = parser().parse_args(list(argv))
    result = poll(
        packages=options.package,
        profiles=options.profile,
        index_url=options.index_url,
        config_file=options.config,
        db=options.db,
        fmt=options.fmt,
        refresh=options.refresh,
    )
    fmt: ViewFormat = options.fmt
    if fmt is ViewFormat.JSON:
        print_json({"schema": "govern.poll/1", **result.as_dict()})
    else:
        _print_human(result)
    if result.unavailable:
        # Nothing asked was read: for cron or CI the poll did not happen (each failure is
        # recorded all the same), even if some pages are still fresh from an earlier poll.
        # Some failures among answers are a normal poll.
        from govern.errors import IndexUnavailable

        _package, reason = result.failures[0]
        asked = result.projects - result.fresh
        projects = "the project" if asked == 1 else f"any of the {asked} projects"
        raise IndexUnavailable(
            f"the index answered none of the requests: could not read {projects} asked "
            f"(first failure: {reason})",
            tip="check --index-url (or index-url in [tool.govern] or pip's configuration) "
            "and the network; `govern poll --package NAME` retries one project",
        )
    raise SystemExit(0)


def _print_human(result: PollResult) -> None:
    print(result.summary())
    for found in result.found:
        print(
            f"  candidate: {found['package']} {found['version']} for {found['clause']} "
            f"(profile {found['profile']}, {found['role']})"
        )
    for package_name, reason in result.failures:
        print(f"  failed: {package_name}: {reason}", file=sys.stderr)
    for limited in result.limited:  # the bound on releases per walk (service/poll.py)
        print(f"  warning: {limited['message']}", file=sys.stderr)


def poll(
    *,
    packages: Sequence[str] = (),
    profiles: Sequence[str] = (),
    index_url: str | None = None,
    config_file: Path | None = None,
    db: str | None = None,
    fmt: ViewFormat = ViewFormat.HUMAN,
    refresh: bool = False,
) -> PollResult:
    """One poll of every tracked exclusion (or of ``packages``) on the configured profiles."""
    import asyncio  # here: asyncio (and ssl) would cost `govern audit` 25 ms at start-up

    from packaging.utils import canonicalize_name

    from govern.config import load_config
    from govern.index.settings import index_settings, profiles_from

    config = load_config(Path.cwd(), config_file)
    chosen = profiles_from(config, profiles)
    settings = index_settings(config, index_url)
    announce_index(settings)
    names = sorted({canonicalize_name(p) for p in packages})
    with _open_store(db, config.database) as store:
        bar: Any = None
        if sys.stderr.isatty() and fmt is ViewFormat.HUMAN:
            import typer  # a terminal's progress bar: a person is waiting anyway

            from govern.service.poll import watched

            with store.transaction() as tx:
                total = len({w.package for w in watched(tx, names)})
            bar = typer.progressbar(length=total, label="polling", file=sys.stderr, show_pos=True)
            bar.__enter__()
        try:
            result = asyncio.run(_poll(store, settings, chosen, names, bar, refresh))
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
    # The store is closed and committed: nothing is left to release but memory, which
    # the process's end frees at once (a 1,000-project poll spent 0.2 s freeing objects).
    from govern.cli import STATE

    STATE.fast_exit = True
    return result
