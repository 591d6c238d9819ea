"""``govern serve`` (the dashboard), ``govern dashboard`` (its front page in a terminal),
``govern report`` (the same as a static HTML page or a Markdown issue body)."""

from __future__ import annotations

import enum
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from govern.cli.options import ConfigOption, DbOption, FormatOption
from govern.cli.output import ViewFormat
from govern.cli.output import print_json as _print_json
from govern.errors import ConfigError, GovernError
from govern.text import line

if TYPE_CHECKING:
    from govern.config import Config
    from govern.store.db import Store


def require_web_stack(*modules: str) -> None:
    """Stop with a tip when the web extra (or what it needs) is missing or broken.

    ``modules``: what the command uses (``govern report`` renders with Jinja alone, and
    must not load the server); default: the whole web stack.
    """
    for name in modules or ("fastapi", "jinja2", "uvicorn"):
        try:
            importlib.import_module(name)
        except ImportError as exc:  # missing, or installed without what it needs
            raise GovernError(
                f"the dashboard needs the web extra ({exc.name or name} is missing)",
                tip="pip install 'govern[web]'",
            ) from None


def _state(store: Store, config: Config, http: Any = None) -> Any:
    from govern import application
    from govern.web.security import Secrets
    from govern.web.state import AppState

    secrets = Secrets.from_environ(
        os.environ,
        token_env=config.web_token_env,
        github_env=config.github_webhook_secret_env,
        buildkite_env=config.buildkite_webhook_token_env,
        gitlab_env=config.gitlab_webhook_token_env,
    )
    state = AppState(store=store, secrets=secrets, config=config)
    # Without an index an isolated "verify now" errors, never guesses one.
    state.index = application.optional_index(config)
    if config.ci and http is not None:
        try:
            withheld = application.configured_secrets(config, store=store)
            ci = application.ci_providers(config, http, secrets=withheld)
        except ConfigError as exc:  # the pages do not need CI: serve them, say what is off
            typer.echo(
                f"govern: warning: CI providers are off ({exc.message}): webhooks and "
                "'verify now' will not reach CI",
                err=True,
            )
        else:
            state.ci = ci
    return state


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on.", min=1, max=65535)
    ] = 8080,
    max_body: Annotated[
        int,
        typer.Option(
            "--max-body",
            help="Largest request body (webhooks), in bytes; more is refused with 413.",
            min=1024,
        ),
    ] = 1024 * 1024,
    auth_failures: Annotated[
        int,
        typer.Option(
            "--auth-failures",
            help="Failed sign-ins or bearer tokens a client may make per minute before 429.",
            min=1,
        ),
    ] = 10,
    config_file: ConfigOption = None,
    db: DbOption = None,
) -> None:
    """The dashboard: pending relaxations, all exclusions, debt, a JSON API, webhooks, metrics.

    Read-only unless the write token is set (the variable named by web.token-env,
    GOVERN_WEB_TOKEN by default).
    """
    require_web_stack()
    import uvicorn  # here, with the stack below: see govern.cli

    from govern import application
    from govern.web.app import create_app
    from govern.web.limits import Throttle

    config = application.settings(config_file)
    with application.store(db, config) as store:
        http = application.ci_http()
        state = _state(store, config, http)
        state.max_body = max_body
        state.throttle = Throttle(auth_failures)
        mode = "read-write" if state.secrets.writable else "read-only"
        typer.echo(
            f"govern: serving {store.display_url} on http://{host}:{port}/ ({mode})", err=True
        )
        # uvicorn shuts down gracefully on SIGTERM, then raises the signal again for the
        # handler it replaced: the default one ended the process with -15 (a failure to
        # every supervisor) before the store closed. This one lets serve return, code 0.
        previous = signal.signal(signal.SIGTERM, _stopped)
        try:
            uvicorn.run(
                create_app(state),
                host=host,
                port=port,
                log_level="warning",
                proxy_headers=False,
                server_header=False,
            )
        finally:
            signal.signal(signal.SIGTERM, previous)
        typer.echo("govern: stopped", err=True)


def _stopped(signum: int, frame: object) -> None:
    """SIGTERM once uvicorn has shut down: nothing left to stop, ``serve`` returns."""


class ReportFormat(enum.StrEnum):
    """Output of ``govern report``."""

    HTML = "html"
    MARKDOWN = "markdown"


def _collect(store: Store) -> dict[str, Any]:
    from govern.store.columns import utcnow
    from govern.store.pending import attention, relaxable

    now = utcnow()
    with store.connection() as session:
        return {
            "now": now,
            "pending": relaxable(session, now=now, limit=200),
            "attention": attention(session, now=now),
        }


def dashboard(
    config_file: ConfigOption = None, db: DbOption = None, fmt: FormatOption = ViewFormat.HUMAN
) -> None:
    """The pending relaxations, then overdue, failed and held, in the terminal."""
    from govern import application

    config = application.settings(config_file)
    with application.store(db, config) as store:
        found = _collect(store)
    pending, attention = found["pending"], found["attention"]
    if fmt is ViewFormat.JSON:
        from govern.store.views import as_json

        _print_json(
            {
                "schema": "govern.dashboard/1",
                "pending": as_json(pending.items),
                "pending_total": pending.total,
                "awaiting_review": as_json(pending.awaiting_review),
                "overdue_total": attention["overdue_total"],
                "held_total": attention["held_total"],
                "failed": [{**f, "finished": str(f["finished"])} for f in attention["failed"]],
            }
        )
        return

    def show(text: object, width: int = 110) -> str:
        return line(text, width)

    from govern.output.style import terminal

    style = terminal()
    typer.echo(f"Pending relaxations: {pending.total}")
    for item in pending.items:
        x = item.exclusion
        evidence = item.evidence
        verdict = (
            style.state(str(evidence.conclusion or "running"))
            + " "
            + show(
                f"on {evidence.profile}"
                + (f", installed {evidence.installed}" if evidence.installed else "")
            )
            if evidence
            else "not verified yet"
        )
        typer.echo(
            f"  {show(x.package, 40)} {show(x.clause, 30)} -> {show(item.candidate, 40)} "
            f"({verdict})",
            color=style.color,
        )
        typer.echo(f"      - {show(item.change.before)}")
        if item.change.after is not None:
            typer.echo(f"      + {show(item.change.after)}")
        typer.echo(
            f"      {show(x.repository or '(no origin)', 50)} {show(x.source, 60)}:{x.line}"
            f"  age {x.age_days} d  owner {show(x.owner or '-', 30)}"
        )
    typer.echo(f"Awaiting review: {len(pending.awaiting_review)}")
    for r in pending.awaiting_review:
        x = r.exclusion
        where = r.url or (f"branch {r.branch}" if r.branch else str(r.kind))
        evidence = (
            f"{r.evidence.conclusion} on {r.evidence.profile}"
            + (f", installed {r.evidence.installed}" if r.evidence.installed else "")
            if r.evidence
            else "no evidence recorded"
        )
        typer.echo(
            f"  {show(x.package, 40)} {show(x.clause, 30)} -> {show(r.candidate or '-', 40)}"
            f"  {show(where, 80)}  waiting {r.age_days} d ({show(evidence)})"
        )
        if r.change.after:
            typer.echo(f"      - {show(r.change.before)}")
            typer.echo(f"      + {show(r.change.after)}")
    typer.echo(f"Overdue: {attention['overdue_total']}")
    for x in attention["overdue"]:
        typer.echo(f"  {show(x.package, 40)} {show(x.clause, 30)} review by {x.review_by}")
    typer.echo(f"Failed verifications: {len(attention['failed'])}")
    for f in attention["failed"]:
        typer.echo(
            f"  {show(f['package'], 40)} {show(f['version'], 30)} on {show(f['profile'], 30)}"
        )
    typer.echo(f"Held: {attention['held_total']}")


def report(
    fmt: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="html (a page) or markdown (an issue).")
    ] = ReportFormat.MARKDOWN,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default: stdout).")
    ] = None,
    config_file: ConfigOption = None,
    db: DbOption = None,
) -> None:
    """The pending view as a static HTML page or a Markdown issue body."""
    from govern import application

    if fmt is ReportFormat.HTML:
        require_web_stack("jinja2")  # a page rendered here: no server
    config = application.settings(config_file)
    with application.store(db, config) as store:
        found = _collect(store)
    from govern.web.report import html, markdown

    text = html(**found) if fmt is ReportFormat.HTML else markdown(**found)
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, encoding="utf-8")
    typer.echo(f"govern: wrote {output}", err=True)
