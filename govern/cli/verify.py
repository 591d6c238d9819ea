"""``govern verify``: try current candidates on their runtime profiles through CI."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from govern.cli.options import ConfigOption, DbOption, FormatOption, IndexOption
from govern.cli.output import ViewFormat, announce_index
from govern.cli.output import print_json as _print_json
from govern.errors import GovernError
from govern.exclusions.states import CandidateStatus
from govern.output.human import one_line, truncate
from govern.output.style import terminal
from govern.text import visible

if TYPE_CHECKING:
    from govern.config import Config
    from govern.service.verify import VerifyResult


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
    forget: Annotated[
        str | None,
        typer.Option(
            "--forget",
            metavar="VERSION",
            help="Take back the verdict on this version (needs --reason): a candidate again.",
            show_default=False,
        ),
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option(
            "--reason", help="With --forget: why (kept in the thread).", show_default=False
        ),
    ] = None,
    actor: Annotated[
        str | None,
        typer.Option("--actor", help="With --forget: who (default: $USER).", show_default=False),
    ] = None,
    poll_interval: Annotated[
        float, typer.Option("--poll-interval", help="With --wait: seconds between polls.", min=0)
    ] = 15.0,
    index_url: IndexOption = None,
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Try each current candidate on its runtime profile through CI, and record the result.

    A pass needs evidence that the candidate was installed. A failure counts (the version
    becomes known-bad) only when it fails twice and the same check passes on the release the
    line admits today; a check that fails there too is broken: errored, no verdict. Errored,
    cancelled and timed-out runs are retried and never count. Exit 0 when no candidate was
    found bad (or runs are still going), 1 when one was, 2 when verification could not be
    done (no provider, a token refused).
    """
    import asyncio  # here, with the stack below: see govern.cli

    from govern import application
    from govern.service.verify import VerifyOptions

    config = application.settings(config_file)
    if forget is not None:
        _forget(query, forget, reason, actor, config, db, fmt)
        return
    # Only an isolated install needs the index: without one, the others go on.
    settings = (
        application.index(config, index_url)
        if isolated
        else application.optional_index(config, index_url)
    )
    if settings is not None:
        announce_index(settings)
    options = VerifyOptions(
        query=query,
        profiles=tuple(profile or ()),
        command=command,
        isolated=isolated,
        timeout=timeout,
        wait=wait,
        wait_timeout=wait_timeout,
        poll_interval=poll_interval,
    )
    with application.store(db, config) as store, _progress(fmt is ViewFormat.HUMAN):
        result = asyncio.run(application.verify_once(store, config, settings, options))
    if fmt is ViewFormat.JSON:
        _print_json({"schema": "govern.verify/1", **result.as_dict()})
    else:
        _print_human(result)
    if result.auth_failed:
        raise GovernError(result.errors[0], tip="No run was counted as a pass or a fail.")
    if result.verdicts.get(CandidateStatus.FAILED.value):
        raise typer.Exit(1)


@contextlib.contextmanager
def _progress(shown: bool) -> Iterator[None]:
    """The slow steps of local runs (a fresh environment, the check) as they happen, on
    stderr, while the call runs (human output only: JSON stays one document)."""
    if not shown:
        yield
        return
    logger = logging.getLogger("govern.ci.command")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("  ... %(message)s"))
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _forget(
    query: str | None,
    version: str,
    reason: str | None,
    actor: str | None,
    config: Config,
    db: str | None,
    fmt: ViewFormat,
) -> None:
    """``--forget VERSION``: take a recorded verdict back (service.verify.forget_verdict)."""
    import getpass

    from govern import application
    from govern.service.verify import forget_verdict

    if query is None:
        raise GovernError("--forget needs the package (or exclusion id) it is about")
    if not reason or not reason.strip():
        raise GovernError("--forget needs --reason: say why the verdict is taken back")
    who = actor or getpass.getuser()
    with application.store(db, config) as store:
        forgotten = forget_verdict(store, query, version, reason=reason, actor=who)
    if fmt is ViewFormat.JSON:
        _print_json({"schema": "govern.verify/1", "forgotten": forgotten})
        return
    for item in forgotten:
        typer.echo(
            f"forgotten  {query} {item['version']} on {item['profile']}: was {item['verdict']}, "
            "a candidate again"
        )


def _print_human(result: VerifyResult) -> None:
    style = terminal()
    for run in result.runs:
        installed = f", installed {run['installed']}" if run["installed"] else ""
        where = f"  {run['run_url']}" if run["run_url"] else ""
        kind = "" if run["kind"] == "candidate" else f"{run['kind']} of "
        ran = f" (ran {run['ran']})" if run["ran"] != run["version"] else ""
        conclusion = style.state(f"{run['conclusion']:<9}", run["conclusion"])
        typer.echo(
            f"{conclusion}  "
            f"{kind}{run['package']} {run['version']}{ran} on "
            f"{run['profile']} ({run['provider']}, attempt {run['attempt']}{installed}){where}",
            color=style.color,
        )
        if run["detail"]:
            typer.echo(f"           {truncate(one_line(run['detail']), 200)}")
        if run["log_tail"]:
            typer.echo("           output (last lines):")
            for line in run["log_tail"].splitlines():
                typer.echo(f"           | {truncate(visible(line), 200)}")
        verdict = style.state(run["verdict"])
        typer.echo(f"           => {verdict}: {one_line(run['why'])}", color=style.color)
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
