"""The store's commands: ``govern db``, ``govern track``, ``govern status``, ``govern history``."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from govern.cli.options import DbOption, FormatOption
from govern.cli.output import ViewFormat
from govern.cli.output import print_json as _print_json
from govern.errors import UsageError
from govern.exclusions.states import VERIFICATION_EVENTS, EventKind, Kind, State
from govern.text import line, visible

if TYPE_CHECKING:
    from govern.store.db import Store
    from govern.store.views import EventPublic, ThreadPublic

db_app = typer.Typer(help="The store's schema: upgrade, downgrade, show the revision.")


def _open(db: str | None, root: Path | None = None, *, upgrade: bool = True) -> Store:
    from govern import application  # here: see govern.cli

    return application.store(db, application.settings(root=root), upgrade=upgrade)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
    db: DbOption = None,
) -> None:
    """Migrate the database to the newest schema (or to REVISION)."""
    with _open(db, upgrade=False) as store:
        before = store.schema_state()
        store.upgrade(revision)
        after = store.schema_state()
        typer.echo(
            f"{store.display_url}: {before.current or 'empty'} -> {after.current or 'empty'}"
        )


@db_app.command("downgrade")
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision; `base` drops every table.")],
    db: DbOption = None,
) -> None:
    """Migrate the database down to REVISION."""
    with _open(db, upgrade=False) as store:
        store.downgrade(revision)
        typer.echo(f"{store.display_url}: now at {store.schema_state().current or 'base'}")


@db_app.command("current")
def db_current(db: DbOption = None) -> None:
    """Show the database's revision and the newest one this govern ships."""
    with _open(db, upgrade=False) as store:
        state = store.schema_state()
        status = "up to date" if state.up_to_date else "needs `govern db upgrade`"
        typer.echo(
            f"{store.display_url}: revision {state.current or 'none'}, head {state.head} ({status})"
        )


def _progress_bar(enabled: bool) -> Any:
    """A progress callback for replaying history: a bar on a terminal, nothing otherwise."""
    if not enabled:
        return None, None
    bar: Any = None

    def update(done: int, total: int, what: str) -> None:
        nonlocal bar
        if bar is None:
            bar = typer.progressbar(
                length=total, label="replaying history", file=sys.stderr, show_pos=True
            )
            bar.__enter__()
        bar.update(1)

    def close() -> None:
        if bar is not None:
            bar.__exit__(None, None, None)

    return update, close


def track(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="A directory (the repository) or files; default: here.", show_default=False
        ),
    ] = None,
    history: Annotated[
        bool,
        typer.Option("--history", help="Replay each source's git history first (backfill)."),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option("--since", help="With --history: only commits from this day (YYYY-MM-DD)."),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="A .govern.toml to use instead of the root's."),
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Audit and record the exclusions in the store, with their git provenance.

    One transaction: new exclusions are `added`, changed reasons `annotation-changed`,
    clauses changed in place `changed` (linked to their predecessor), vanished ones
    `removed`. Running it again without changes adds nothing.
    """
    from govern import application
    from govern.audit import resolve_targets
    from govern.service.track import TrackOptions
    from govern.service.track import track as run_track

    since_day = _day(since, "--since")
    if since_day is not None and not history:
        raise UsageError("--since bounds --history", tip="Add --history, or drop --since.")
    root, files = resolve_targets(paths or [], Path.cwd())
    config = application.settings(config_file, root)
    update, close = _progress_bar(history and sys.stderr.isatty() and fmt is ViewFormat.HUMAN)
    with application.store(db, config) as store:
        try:
            result = run_track(
                store,
                root,
                files,
                config=config,
                options=TrackOptions(history=history, since=since_day),
                progress=update,
            )
        finally:
            if close is not None:
                close()
        if fmt is ViewFormat.JSON:
            _print_json(
                {
                    "schema": "govern.track/1",
                    "repository": result.repository,
                    "database": store.display_url,
                    "commit": result.commit,
                    "replayed_commits": result.replayed,
                    **result.counts.as_dict(),
                    "notes": list(result.notes),
                }
            )
            return
        counts = result.counts
        for note in result.notes:
            typer.echo(f"note: {note}", err=True)
        replayed = f", {result.replayed} commits replayed" if history else ""
        typer.echo(
            f"{result.repository}: {counts.sources} sources{replayed}; "
            f"{counts.added} added, {counts.restored} restored, {counts.changed} changed, "
            f"{counts.annotation_changed} reasons changed, {counts.removed} removed, "
            f"{counts.unchanged} unchanged ({store.display_url})"
        )


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"{option} {value!r} is not a date", tip="Write it as YYYY-MM-DD."
        ) from None


def untrack(
    repository: Annotated[
        str, typer.Argument(help="The repository's name, as `govern status` shows it.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    db: DbOption = None,
) -> None:
    """Forget a repository: its sources, exclusions, their whole threads, candidates,
    verifications, proposals and outbox rows. Releases stay (they are the packages').

    Asks first (a terminal is needed for that; --yes skips the question). A later
    `govern track` of the repository starts it afresh.
    """
    from govern.notify.base import repository_key
    from govern.store.synced import repository as repository_row
    from govern.store.tracking import forget_repository

    with _open(db) as store:
        with store.transaction() as conn:
            known = repository_row(conn, name=repository) is not None
        if not known:
            raise UsageError(
                f"no repository named '{line(repository)}' is tracked",
                tip="`govern status` lists the repositories tracked, by name.",
            )
        if not yes:
            if not sys.stdin.isatty():
                raise UsageError(
                    f"untrack deletes {line(repository)}'s rows and asks first, but there "
                    "is no terminal to ask on",
                    tip="Add --yes to forget it without asking.",
                )
            typer.confirm(
                f"Forget {line(repository)} and every row of it in {store.display_url}?",
                abort=True,
            )
        with store.session(write=True) as session:
            counts = forget_repository(session, name=repository, keyed=repository_key(repository))
        if counts is None:  # forgotten meanwhile, by another run
            raise UsageError(f"no repository named '{line(repository)}' is tracked")
        counts.pop("repositories", None)
        removed = ", ".join(f"{n} {table}" for table, n in counts.items())
        typer.echo(f"forgot {line(repository)} ({store.display_url}): {removed}")


_STATES = tuple(State)
_KINDS = tuple(Kind)


def _check_choices(values: list[str] | None, allowed: tuple[str, ...], option: str) -> list[str]:
    chosen = [v for value in values or [] for v in value.split(",") if v]
    wrong = [v for v in chosen if v not in allowed]
    if wrong:
        raise UsageError(
            f"{option} {', '.join(wrong)} is not one of {', '.join(allowed)}",
            tip=f"Repeat {option} or separate values with commas.",
        )
    return chosen


def status(
    package: Annotated[
        list[str] | None, typer.Option("--package", help="Only these packages (repeatable).")
    ] = None,
    repository: Annotated[
        list[str] | None,
        typer.Option("--repository", help="Only repositories whose name contains this."),
    ] = None,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="not-equal, cap, pin or ban.")
    ] = None,
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            help="held, candidate, verifying, verified, proposed, "
            "overdue, relaxed or removed (the last two show ended exclusions).",
        ),
    ] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="Owner contains this.")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Include relaxed and removed exclusions.")
    ] = False,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """The tracked exclusions: state, age, reason and owner."""
    from govern.store.columns import utcnow
    from govern.store.queries import exclusions

    kinds = _check_choices(kind, _KINDS, "--kind")
    states = _check_choices(state, _STATES, "--state")
    now = utcnow()
    with _open(db) as store, store.connection() as session:
        views = exclusions(
            session,
            now=now,
            packages=package or (),
            repositories=repository or (),
            kinds=kinds,
            states=states,
            owner=owner,
            include_ended=all_,
        )
    if fmt is ViewFormat.JSON:
        from govern.store.views import as_json

        shown = as_json(views)
        _print_json({"schema": "govern.status/1", "exclusions": shown})
        return
    if not views:
        typer.echo(
            "no exclusions tracked match"
            if any((package, repository, kinds, states, owner))
            else "no exclusions tracked yet: run `govern track`"
        )
        return
    from govern.output.style import terminal  # only for this view: history stays light

    style = terminal()
    current_repo = None
    for view in views:
        if view.repository != current_repo:
            current_repo = view.repository
            typer.echo(line(current_repo))
        owner_text = f"  owner {line(view.owner)}" if view.owner else ""
        review = f"  review-by {view.review_by}" if view.review_by else ""
        typer.echo(
            f"  {line(view.source)}:{view.line}  {line(view.package)} {line(view.clause)}  "
            f"[{view.kind}]  {style.state(str(view.state))}  {view.age_days}d{owner_text}{review}",
            color=style.color,  # click strips escapes it did not see asked for
        )
        if len(views) == 1 and view.reason:  # one exclusion: its reason in full
            typer.echo(_wrapped("", view.reason))
        else:
            typer.echo(f"      {line(view.reason, 100) if view.reason else '(no reason)'}")
    typer.echo(f"\n{len(views)} exclusion{'s' if len(views) != 1 else ''}")


def _wrapped(label: str, text: str) -> str:
    """``text`` in full on indented lines (a thread is read for its reasons)."""
    return textwrap.fill(
        line(text),
        width=100,
        initial_indent=f"      {label}",
        subsequent_indent=" " * (6 + len(label)),
    )


def history(
    query: Annotated[str, typer.Argument(help="A package name or an exclusion id.")],
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """The governance thread: when each exclusion appeared and changed, in which commit
    and pull request, with its reasons and links."""
    from govern.store.columns import utcnow
    from govern.store.history import lock_history, threads

    with _open(db) as store, store.connection() as session:
        found = threads(session, query=query, now=utcnow())
        # What the locks held of the package (track --history), the threads' or the query's.
        packages = {e.package for thread in found for e in thread.exclusions} or {query}
        held = [h for p in sorted(packages) for h in lock_history(session, package=p)]
    if fmt is ViewFormat.JSON:
        from govern.store.views import as_json

        shown = as_json(found)
        _print_json(
            {"schema": "govern.history/1", "query": query, "threads": shown, "locks": as_json(held)}
        )
        return
    if not found and not held:
        raise UsageError(
            f"nothing tracked for '{line(query)}'",
            tip="Name a package or an exclusion id from `govern status`; run `govern track` first.",
        )
    print_threads(found)
    if held:
        typer.echo("locks (what each installed, from govern track --history):")
        for item in held:
            commits = f"  {item.since_commit[:10]}" + (
                f"..{item.until_commit[:10]}" if item.until_commit else ""
            )
            typer.echo(visible(f"  {line(item.repository)}  {line(item.said, 300)}{commits}"))


def print_threads(found: Sequence[ThreadPublic]) -> None:
    """Each thread as ``govern history`` prints it: its exclusions, links and events."""
    for number, thread in enumerate(found, start=1):
        packages = sorted({e.package for e in thread.exclusions})
        typer.echo(
            f"thread {number}: {line(', '.join(packages))} "
            f"({len(thread.exclusions)} exclusion{'s' if len(thread.exclusions) != 1 else ''}, "
            f"{line(thread.exclusions[0].repository)})"
        )
        if thread.links:
            typer.echo(f"  links: {line(', '.join(thread.links))}")
        last_reason: dict[str, str | None] = {}
        for event in thread.events:
            where = event.source
            change = _describe(event)
            commit = f"  {event.commit[:10]}" if event.commit else ""
            pr = f"  #{event.pull_request}" if event.pull_request else ""
            typer.echo(visible(f"  {event.at.date()}  {change}  {where}{pr}{commit}"))
            if (
                event.reason != last_reason.get(event.exclusion, "\0")
                and event.kind != EventKind.REMOVED
            ):
                typer.echo(_wrapped("reason: ", event.reason or "(none)"))
                last_reason[event.exclusion] = event.reason
        typer.echo("")


def _describe(event: EventPublic) -> str:
    if event.kind == EventKind.CHANGED:
        return (
            f"changed  {event.package} {event.detail.get('from')} -> "
            f"{event.detail.get('to')} ({event.detail.get('direction', 'changed')})"
        )
    if event.kind == EventKind.ANNOTATION_CHANGED:
        fields = ", ".join(sorted(event.detail)) or "annotation"
        return f"{fields} changed  {event.package} {event.clause}"
    if event.kind == EventKind.CANDIDATE_FOUND:
        return (
            f"candidate  {event.package} {event.detail.get('version')} for "
            f"{event.clause} (profile {event.detail.get('profile')})"
        )
    if event.kind in VERIFICATION_EVENTS:
        detail = event.detail
        what = event.kind.removeprefix("verification-")
        if event.kind == EventKind.VERIFICATION_ERRORED:
            what = str(detail.get("conclusion") or what)
        installed = f", installed {detail['installed']}" if detail.get("installed") else ""
        kind = detail.get("kind") or "candidate"
        ran = f" ({kind} on {detail.get('ran')})" if kind != "candidate" else ""
        why = f": {detail['why']}" if detail.get("why") else ""
        return (
            f"verification {what}  {event.package} {detail.get('version')}{ran} on "
            f"{detail.get('profile')} ({detail.get('provider')}, attempt "
            f"{detail.get('attempt')}{installed}){why}"
        )
    if event.kind == EventKind.VERDICT_FORGOTTEN:
        detail = event.detail
        was = "/".join(detail.get("verdicts") or ()) or "a verdict"
        return (
            f"verdict forgotten  {event.package} {detail.get('version')} (was {was}) by "
            f'{line(detail.get("by"), 64)}: "{line(detail.get("reason") or "", 300)}"'
        )
    if event.kind == EventKind.PROPOSAL_HELD:
        return (
            f"proposal held  {event.package} {event.detail.get('version')}: "
            f"{line(event.detail.get('why') or '', 300)}"
        )
    if event.kind == EventKind.SETTLED:
        return (
            f"settled  {event.package} {event.clause}: {event.detail.get('why')} "
            "(nothing left to relax: no candidates, no CI)"
        )
    if event.kind == EventKind.MOVED:
        return (
            f"moved  {event.package} {event.clause}  "
            f"{event.detail.get('from')} -> {event.detail.get('to')}"
        )
    if event.kind == EventKind.ADDED and event.detail.get("restored"):
        return f"restored  {event.package} {event.clause}"
    return f"{event.kind}  {event.package} {event.detail.get('clause', event.clause)}"
