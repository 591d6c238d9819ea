"""``govern audit``: list every exclusion with its reason, and the policy findings."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import gc
import os
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from govern.audit import AuditOptions, audit_targets, resolve_targets
from govern.cli import STATE
from govern.config import load_config
from govern.errors import UsageError
from govern.output import OutputFormat, use_color, write
from govern.policy.loader import load_policy
from govern.policy.model import Severity

if TYPE_CHECKING:
    from govern.config import Config
    from govern.policy.model import Policy
    from govern.report import AuditReport


class FailOn(enum.StrEnum):
    """The lowest severity that makes ``govern audit`` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the audit builds and prints its report.

    An audit allocates millions of long-lived objects that form no cycles; the
    collector would walk them again and again as they pile up (a quarter of the wall
    time of a 100,000-requirement audit). Reference counting still frees temporaries.
    Done here, in the process's owner, not in the library: a daemon or a web worker
    running audits in threads keeps its collector.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _online(
    report: AuditReport, config: Config, policy: Policy, index_url: str | None
) -> AuditReport:
    """The report with the index rules' findings added (the index is asked once per package)."""
    # Here, not at the top: the index code is for --online only (see govern.cli).
    import asyncio

    from govern.cli.output import announce_index
    from govern.index.client import fetch_pages
    from govern.index.settings import index_settings, profiles_from
    from govern.policy.online import evaluate_online, watched

    settings = index_settings(config, index_url)
    names = sorted({e.package for e in report.exclusions if watched(e)})
    if names:
        announce_index(settings)
    pages = asyncio.run(fetch_pages(settings, names)) if names else {}
    extra = evaluate_online(
        policy,
        report.exclusions,
        pages,
        profiles_from(config),
        now=datetime.now(UTC),
        stale_days=config.stale_cap_days,
    )
    findings = sorted(
        (*report.findings, *extra),
        key=lambda f: (f.source, f.line, f.column or 0, f.rule, f.message),
    )
    return dataclasses.replace(report, findings=tuple(findings))


def audit(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="A directory to discover sources in, or files to read (any name).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="Output format.")
    ] = OutputFormat.HUMAN,
    policy: Annotated[
        str | None,
        typer.Option("--policy", "-p", help="default, strict, library, or a policy file."),
    ] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 on findings at or above this severity (default: the policy's).",
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="A .govern.toml to use instead of the root's."),
    ] = None,
    allow_outside_root: Annotated[
        bool,
        typer.Option("--allow-outside-root", help="Follow -r/-c includes outside the root."),
    ] = False,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Judge review dates as of this day (YYYY-MM-DD)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the report to a file instead of stdout."),
    ] = None,
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Also ask the package index: unknown-version, yanked-excluded, stale-cap, "
            "fix-available.",
        ),
    ] = False,
    index_url: Annotated[
        str | None,
        typer.Option("--index-url", help="The Simple API root for --online.", show_default=False),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Also read what this store knows is bad (every tracked repository's bad= and "
            "failed verifications) for lock-holds-known-bad.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Audit requirement files and pyproject.toml: exclusions, reasons, findings.

    Exit codes: 0 nothing at or above the fail level, 1 findings at or above it,
    2 the audit could not be run.
    """
    try:
        today = date.fromisoformat(as_of) if as_of else date.today()
    except ValueError:
        raise UsageError(
            f"--as-of {as_of!r} is not a date", tip="Write it as YYYY-MM-DD."
        ) from None
    cwd = Path.cwd()
    root, files = resolve_targets(paths or [], cwd)
    config = load_config(root, config_file)
    policy_base = config.path.parent if config.path else cwd
    chosen = load_policy(policy or config.policy or "default", base=cwd if policy else policy_base)
    if fail_on is not None:
        level = Severity.OFF if fail_on is FailOn.NEVER else Severity(fail_on.value)
    elif config.fail_on:  # validated by load_config: error, warning, info or never
        level = Severity.OFF if config.fail_on == "never" else Severity(config.fail_on)
    else:
        level = chosen.fail_on
    options = AuditOptions(
        today=today, allow_outside_root=allow_outside_root, known_bad=_known_bad(db, config)
    )
    with _collector_paused():
        report = audit_targets(root, files, config=config, policy=chosen, options=options)
        if online:
            report = _online(report, config, chosen, index_url)
        elif index_url is not None:
            raise UsageError("--index-url is for --online", tip="Add --online, or drop it.")
        if output is not None:
            try:
                with output.open("w", encoding="utf-8") as stream:
                    write(report, fmt, stream)
            except OSError as exc:
                raise UsageError(
                    f"cannot write --output {output}: {exc.strerror or exc}",
                    tip="Check that the directory exists and is writable.",
                ) from None
        else:
            color = fmt is OutputFormat.HUMAN and use_color(sys.stdout, os.environ)
            write(report, fmt, sys.stdout, color=color)
    # The report is written and nothing is left to close: end without freeing every object
    # (as mypy does). Users wait for the linter in pre-commit; the teardown was 15% of an
    # audit of the corpus (bench/README.md).
    STATE.fast_exit = True
    raise typer.Exit(1 if report.failed(level) else 0)


def _known_bad(db: str | None, config: Config) -> dict[str, dict[str, str]]:
    """What the store ``--db`` names knows is bad (nothing without ``--db``: the audit
    reads files only unless asked)."""
    if db is None:
        return {}
    from govern.store.db import open_store
    from govern.store.queries import known_bad

    with open_store(db, configured=config.database) as store, store.connection() as conn:
        return known_bad(conn)
