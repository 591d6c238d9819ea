"""``govern poll``: ask the index about every tracked exclusion, record releases and candidates."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from packaging.utils import canonicalize_name

from govern.cli.options import ConfigOption, DbOption, FormatOption, IndexOption
from govern.cli.output import ViewFormat, announce_index, print_json
from govern.errors import IndexUnavailable
from govern.text import line

if TYPE_CHECKING:
    from govern.index.model import FetchResult
    from govern.service.poll import PollResult


def poll_command(
    package: Annotated[
        list[str] | None,
        typer.Option("--package", metavar="NAME", help="Only these packages (repeatable)."),
    ] = None,
    profile: Annotated[
        list[str] | None,
        typer.Option("--profile", metavar="NAME", help="Only these runtime profiles (repeatable)."),
    ] = None,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Ask the index about every project, even one whose last answer is still fresh "
            "(the index's Cache-Control max-age, an hour at most).",
        ),
    ] = False,
    index_url: IndexOption = None,
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Ask the package index about every tracked exclusion: releases, candidates, and why not.

    One request per project, conditional (an unchanged project costs a 304). A project
    that cannot be fetched is recorded and changes nothing. Exit 0 when the poll read the
    index (each project that failed is reported and recorded); 2 when the run could not be
    done, including a poll in which every project asked failed (after the report).
    """
    result = poll(
        packages=package or [],
        profiles=profile or [],
        index_url=index_url,
        config_file=config_file,
        db=db,
        fmt=fmt,
        refresh=refresh,
    )
    if fmt is ViewFormat.JSON:
        print_json({"schema": "govern.poll/1", **result.as_dict()})
    else:
        _print_human(result)
    if result.unavailable:
        # Nothing asked was read: for cron or CI the poll did not happen (each failure is
        # recorded all the same), even if some pages are still fresh from an earlier poll.
        # Some failures among answers are a normal poll.
        _package, reason = result.failures[0]
        asked = result.projects - result.fresh
        projects = "the project" if asked == 1 else f"any of the {asked} projects"
        raise IndexUnavailable(
            f"the index answered none of the requests: could not read {projects} asked "
            f"(first failure: {reason})",
            tip="check --index-url (or index-url in [tool.govern] or pip's configuration) "
            "and the network; `govern poll --package NAME` retries one project",
        )


_PASSED_OVER_SHOWN = 20


def _print_human(result: PollResult) -> None:
    print(result.summary())
    for found in result.found:
        role = "the first after the excluded one" if found["role"] == "first" else "the newest"
        print(
            f"  candidate: {found['package']} {found['version']} for {found['clause']} "
            f"(profile {found['profile']}, {role})"
        )
    shown = result.passed_over[:_PASSED_OVER_SHOWN]
    for skipped in shown:
        print(
            f"  passed over: {line(skipped['package'], 60)} {line(skipped['version'], 40)} "
            f"for {skipped['clause']} ({skipped['profile']}): {line(skipped['reason'], 200)}"
        )
    if result.passed_over_total > len(shown):
        print(f"  ... {result.passed_over_total - len(shown)} more passed over (--format json)")
    for settled in result.newly_settled:
        print(
            f"  settled: {settled['package']} {settled['clause']}: {settled['why']} "
            "(no candidates, no CI)"
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
    import asyncio  # here, with the stack below: see govern.cli

    from govern import application
    from govern.service.poll import poll_index
    from govern.store.polling import watched

    config = application.settings(config_file)
    chosen = application.profiles(config, list(profiles))
    settings = application.index(config, index_url)
    announce_index(settings)
    names = sorted({canonicalize_name(p) for p in packages})
    with application.store(db, config) as store:
        bar: Any = None
        if sys.stderr.isatty() and fmt is ViewFormat.HUMAN:
            with store.transaction() as conn:
                total = len({w.ref.package for w in watched(conn, packages=names)})
            bar = typer.progressbar(length=total, label="polling", file=sys.stderr, show_pos=True)
            bar.__enter__()

        def done(_name: str, _result: FetchResult) -> None:
            if bar is not None:
                bar.update(1)

        try:
            return asyncio.run(
                poll_index(store, settings, chosen, packages=names, on_done=done, refresh=refresh)
            )
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
