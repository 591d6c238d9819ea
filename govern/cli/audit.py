"""``govern audit``: list every exclusion with its reason, and the policy findings."""

from __future__ import annotations

import enum
import os
import sys
from datetime import date
from pathlib import Path

import typer

from govern.cli import app
from govern.errors import UsageError
from govern.output import OutputFormat


class FailOn(enum.StrEnum):
    """The lowest severity that makes ``govern audit`` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"


@app.command()
def audit(
    paths: list[Path] = typer.Argument(  # noqa: B008 - typer declares options this way
        None, help="A directory to discover sources in, or files to read (any name).",
        show_default=False,
    ),
    fmt: OutputFormat = typer.Option(OutputFormat.HUMAN, "--format", "-f",
                                     help="Output format."),
    policy: str | None = typer.Option(None, "--policy", "-p",
                                      help="default, strict, library, or a policy file."),
    fail_on: FailOn | None = typer.Option(None, "--fail-on",
                                          help="Exit 1 on findings at or above this severity "
                                               "(default: the policy's, usually error)."),
    config_file: Path | None = typer.Option(None, "--config",
                                            help="A .govern.toml to use instead of the root's."),
    allow_outside_root: bool = typer.Option(False, "--allow-outside-root",
                                            help="Follow -r/-c includes outside the root."),
    as_of: str | None = typer.Option(None, "--as-of",
                                     help="Judge review dates as of this day (YYYY-MM-DD)."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="Write the report to a file instead of stdout."),
) -> None:
    """Audit requirement files and pyproject.toml: exclusions, reasons, findings.

    Exit codes: 0 nothing at or above the fail level, 1 findings at or above it,
    2 the audit could not be run.
    """
    from govern.audit import AuditOptions, resolve_targets
    from govern.audit import audit as run_audit
    from govern.config import load_config
    from govern.output import render, use_color
    from govern.policy.loader import load_policy
    from govern.policy.model import Severity

    try:
        today = date.fromisoformat(as_of) if as_of else date.today()
    except ValueError:
        raise UsageError(f"--as-of {as_of!r} is not a date", tip="Write it as YYYY-MM-DD.") from None
    cwd = Path.cwd()
    root, _ = resolve_targets(paths or [], cwd)
    config = load_config(root, config_file)
    policy_base = config.path.parent if config.path else cwd
    chosen = load_policy(policy or config.policy or "default",
                         base=cwd if policy else policy_base)
    report = run_audit(
        paths or [],
        config=config,
        policy=chosen,
        options=AuditOptions(today=today, allow_outside_root=allow_outside_root),
        cwd=cwd,
    )
    if fail_on is not None:
        level = Severity.OFF if fail_on is FailOn.NEVER else Severity(fail_on.value)
    elif config.fail_on:
        level = Severity.OFF if config.fail_on == "never" else Severity(config.fail_on)
    else:
        level = chosen.fail_on
    if output is not None:
        output.write_text(render(report, fmt), encoding="utf-8")
    else:
        color = fmt is OutputFormat.HUMAN and use_color(sys.stdout, os.environ)
        sys.stdout.write(render(report, fmt, color=color))
    raise typer.Exit(1 if report.failed(level) else 0)
