"""``govern propose``: the branch or pull request that relaxes each verified line, once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from govern.cli.options import ConfigOption, DbOption, FormatOption
from govern.cli.output import ViewFormat
from govern.cli.output import print_json as _print_json

if TYPE_CHECKING:
    from govern.service.outcome import ProposeResult
    from govern.store.db import Store


def propose(
    query: Annotated[
        str | None,
        typer.Argument(help="An exclusion id or a package (default: every verified one)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the diff and the body; send and record nothing."),
    ] = False,
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Propose the narrow relaxation of every verified exclusion, exactly once.

    The branch is pushed to [tool.govern.propose]'s remote (via = "git"), and with
    via = "github" or "gitlab" a pull or merge request is opened, or updated for a newer
    candidate. With propose = "remind", a reminder goes to each channel of
    [tool.govern.notify] (issue comment, webhook, email) instead. Exit 0 when every
    proposal was sent (or needed nothing, or stood aside for another run sending it, or
    left alone a branch holding someone else's commits), 1 when an action failed and will
    be retried, 2 when proposing could not be done.
    """
    import asyncio  # here, with the stack below: see govern.cli

    from govern import application

    config = application.settings(config_file)
    with application.store(db, config) as store:
        result = _nothing_to_propose(store, query) if dry_run else None
        if result is None:
            result = asyncio.run(application.propose_once(store, query, dry_run=dry_run))
    if fmt is ViewFormat.JSON:
        _print_json(result.as_dict())
    else:
        _print_human(result, dry_run=dry_run)
    if result.failed:
        raise typer.Exit(1)


def _nothing_to_propose(store: Store, query: str | None) -> ProposeResult | None:
    """A dry run's answer when no exclusion can be proposed, read without the proposing
    stack (forges, git, HTTP); None when there is work (the proposer then runs)."""
    from govern.service.outcome import ProposeResult
    from govern.store.pending import proposable

    with store.connection() as conn:
        if proposable(conn, query=query):
            return None
    return ProposeResult()


def _print_human(result: ProposeResult, *, dry_run: bool) -> None:
    if not result.proposals:
        typer.echo("nothing to propose: no verified exclusion")
    for item in result.proposals:
        where = f"{item.ref.source}:{item.ref.line}"
        said = item.url or item.branch or ""
        typer.echo(f"{item.state:<10}  {item.ref.package}  {where}  {said}".rstrip())
        if item.message:
            typer.echo(f"            {item.message}")
        if item.tip:
            typer.echo(f"            Tip: {item.tip}")
        if dry_run and item.diff:
            typer.echo(item.diff.rstrip())
            typer.echo("")
            typer.echo(item.body or "")
    for closed in result.closed:
        typer.echo(f"{closed['state']:<10}  change request #{closed['number']}")


def digest(
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Open or edit each repository's pending-relaxations issue and send its digest.

    As [tool.govern.notify] says (pending-issue = true, digest = "daily" or "weekly"),
    once: an issue whose text is unchanged is not edited, and a period's digest is sent
    once however often this runs (the daemon's --digest-every runs it on a schedule).
    Exit 0 when everything was sent or needed nothing, 1 when something failed and will be
    tried again, 2 when it could not be done.
    """
    import asyncio  # here, with the stack below: see govern.cli

    from govern import application

    config = application.settings(config_file)
    with application.store(db, config) as store:
        result = asyncio.run(application.digest_once(store))
    if fmt is ViewFormat.JSON:
        _print_json(result.as_dict())
    else:
        if not result.repositories:
            typer.echo("nothing to do: no repository has a pending issue or a digest configured")
        for item in result.repositories:
            typer.echo(item["repository"])
            for part in ("pending_issue", "digest"):
                if part in item:
                    said = item[part]
                    where = said.get("url") or said.get("period") or ""
                    typer.echo(
                        f"  {part.replace('_', ' '):<14}{said['state']:<10}  {where}".rstrip()
                    )
                    if said.get("message"):
                        typer.echo(f"                {said['message']}")
            if "error" in item:
                typer.echo(f"  failed: {item['error']}")
    if result.failed:
        raise typer.Exit(1)
