"""``govern daemon``: sync, poll, verify, propose (and digest) on a schedule, until stopped."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from govern.cli import STATE
from govern.cli.options import ConfigOption, DbOption, FormatOption, IndexOption
from govern.cli.output import ViewFormat
from govern.daemon.schedule import describe, parse_every
from govern.errors import GovernError, UsageError
from govern.redact import redact as redact_url

if TYPE_CHECKING:
    from govern.config import Config
    from govern.daemon.jobs import Job
    from govern.daemon.lock import Held
    from govern.daemon.runner import Daemon
    from govern.store.db import Store

_EVERY_HELP = "Between two {job} runs: 90s, 15m, 1h, 1d, or off."
_PROPOSE_EVERY = "10m"  # proposing by default once a channel is configured
# Jobs listed in the "started" event only when on (added after govern.daemon/1's first
# readers, who compare the jobs they know).
_OPTIONAL_JOBS = ("digest",)


def _printer(fmt: ViewFormat) -> Any:
    """Each event as a line on standard output, flushed (a journal reads it at once)."""

    def emit(event: dict[str, Any]) -> None:
        at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        if fmt is ViewFormat.JSON:
            line = json.dumps(
                {"schema": "govern.daemon/1", "at": at, **event},
                default=str,
                separators=(",", ":"),
            )
        else:
            line = f"{at} {_human(event)}"
        print(line, flush=True)

    return emit


def _human(event: dict[str, Any]) -> str:
    kind = event["event"]
    if kind == "job":
        state = "ok" if event["ok"] else "FAILED"
        upcoming = f"; next {event['next_run_at']}" if event.get("next_run_at") else ""
        woken = f"; {' and '.join(event['then'])} now" if event.get("then") else ""
        return (
            f"{event['job']} {state} in {event['duration_seconds']:.2f} s: "
            f"{event['summary']}{upcoming}{woken}"
        )
    if kind == "started":
        jobs = ", ".join(f"{name} {what}" for name, what in event["jobs"].items())
        return (
            f"govern daemon started (pid {event['pid']}): {event['database']}; "
            f"index {event['index'] or 'none'}; {jobs}"
        )
    if kind == "stopping":
        after = "now" if event["now"] else "after the running job (again to stop now)"
        return f"{event['signal']}: stopping {after}"
    if kind == "cancelled":
        return f"{event['jobs']} job(s) cancelled after {event['after_seconds']:g} s"
    if kind == "fatal":
        return f"stopping: {event['message']}"
    if kind == "scheduler":
        return f"scheduler {event['level']}: {event['message']}"
    if kind == "stopped":
        if event["ok"]:
            return "govern daemon stopped"
        cut = event.get("interrupted")
        return "govern daemon stopped" + (" (a job was cut off)" if cut else " (a job failed)")
    return json.dumps(event, default=str)


def _roots(paths: list[Path]) -> list[Path]:
    roots: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise UsageError(
                f"{path} is not a directory",
                tip="Give the repositories to keep in sync, as for `govern track DIR`.",
            )
        roots.append(path.resolve())
    return roots


def _proposes(config: Config, roots: list[Path], config_file: Path | None) -> bool:
    """Whether a proposal or reminder channel is configured: ``[propose]`` or ``[notify]``
    here, or in a repository the daemon syncs (each is proposed for as its own
    configuration says)."""
    from govern import application

    if config.proposes:
        return True
    for root in roots:
        try:
            if application.settings(config_file, root).proposes:
                return True
        except GovernError:  # unreadable: the sync reports it on its line, each run
            continue
    return False


def daemon(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Repositories (directories) to keep in sync, as `govern track DIR` (into this "
            "daemon's store); none: only poll and verify what is tracked.",
            show_default=False,
        ),
    ] = None,
    poll_every: Annotated[
        str, typer.Option("--poll-every", help=_EVERY_HELP.format(job="poll"))
    ] = "30m",
    sync_every: Annotated[
        str, typer.Option("--sync-every", help=_EVERY_HELP.format(job="sync"))
    ] = "30m",
    verify_every: Annotated[
        str, typer.Option("--verify-every", help=_EVERY_HELP.format(job="verify"))
    ] = "10m",
    propose_every: Annotated[
        str,
        typer.Option(
            "--propose-every",
            help=_EVERY_HELP.format(job="propose")
            + " Default: every 10m once [propose] or [notify] is configured, else off.",
        ),
    ] = "auto",
    digest_every: Annotated[
        str,
        typer.Option(
            "--digest-every",
            help=_EVERY_HELP.format(job="digest")
            + " The pending issue and the digest of [tool.govern.notify]; a digest is sent"
            " once per its period however often this runs.",
        ),
    ] = "off",
    once: Annotated[
        bool,
        typer.Option("--once", help="Run each job once, then exit (2 if one failed): for cron."),
    ] = False,
    grace: Annotated[
        float,
        typer.Option("--grace", help="On SIGTERM, seconds the running job may take to end.", min=0),
    ] = 60.0,
    index_url: IndexOption = None,
    config_file: ConfigOption = None,
    db: DbOption = None,
    fmt: FormatOption = ViewFormat.HUMAN,
) -> None:
    """Sync, poll, verify and propose on a schedule: fixes noticed and proposed the day they ship.

    The whole loop runs by default: proposing (every 10m) once [propose] or [notify] is
    configured, with a CI provider to verify. At start each job runs once (sync, poll,
    verify, propose, then digest when --digest-every is given); then each on its interval,
    one at a time, with a little jitter. A job that fails is reported and tried again at
    its next time. One daemon per store. SIGTERM or Ctrl-C lets the running job finish
    (within --grace), then exits 0; a second one stops at once. --format json writes one
    JSON object per line (schema
    govern.daemon/1).
    """
    import asyncio  # here, with the stack below: see govern.cli

    from govern import application
    from govern.daemon.jobs import DigestJob, PollJob, ProposeJob, SyncJob, VerifyJob
    from govern.daemon.lock import single_instance
    from govern.daemon.runner import Daemon

    roots = _roots(paths or [])
    config = application.settings(config_file)
    auto_propose = propose_every.strip().lower() == "auto"
    if auto_propose:
        propose_every = _PROPOSE_EVERY if _proposes(config, roots, config_file) else "off"
    every = {
        "sync": parse_every(sync_every, "--sync-every"),
        "poll": parse_every(poll_every, "--poll-every"),
        "verify": parse_every(verify_every, "--verify-every"),
        "propose": parse_every(propose_every, "--propose-every"),
        "digest": parse_every(digest_every, "--digest-every"),
    }
    settings = application.index(config, index_url) if every["poll"] is not None else None
    profiles = application.profiles(config)
    report = _printer(fmt)
    why_off: dict[str, str] = {}
    if not roots:
        why_off["sync"] = "no repository given"
    if auto_propose and every["propose"] is None:
        why_off["propose"] = "no [propose] or [notify] configured: nowhere to propose to"
    if not config.ci:
        why_off["verify"] = "no CI provider configured"
        why_off["propose"] = "nothing is verified without a CI provider"
    running = [
        name for name, seconds in every.items() if seconds is not None and name not in why_off
    ]
    if not running:
        raise UsageError(
            "every job is off: the daemon would have nothing to do",
            tip="Give --poll-every (and a repository to sync, or a CI provider to verify).",
        )

    async def serve(store: Store, held: Held) -> tuple[bool, Daemon]:
        jobs: dict[str, tuple[Job, float]] = {}
        for name in running:
            seconds = every[name]
            assert seconds is not None
            if name == "sync":
                jobs[name] = (SyncJob(store, roots, config_file), seconds)
            elif name == "poll":
                assert settings is not None
                jobs[name] = (PollJob(store, settings, profiles), seconds)
            elif name == "verify":
                verify_index = application.optional_index(config, index_url)
                jobs[name] = (VerifyJob(store, config, verify_index), seconds)
            elif name == "propose":
                jobs[name] = (ProposeJob(store), seconds)
            else:
                jobs[name] = (DigestJob(store), seconds)

        def guard() -> None:  # before each run: still ours, still this govern's schema
            held.check()
            store.recheck_schema()

        runner = Daemon(jobs, report, grace=grace, debug=STATE.debug, guard=guard)
        report(
            {
                "event": "started",
                "pid": os.getpid(),
                "database": store.display_url,
                "lock": held.what,
                "index": redact_url(settings.index_url) if settings is not None else None,
                "jobs": {
                    name: f"every {describe(seconds)}"
                    if name in jobs
                    else f"off ({why_off.get(name, f'--{name}-every off')})"
                    for name, seconds in every.items()
                    if name in jobs or name not in _OPTIONAL_JOBS
                },
                "repositories": [str(root) for root in roots],
                "once": once,
            }
        )
        ok = await runner.run(once=once)
        return ok, runner

    with application.store(db, config) as store, single_instance(store) as held:
        store.ensure_schema()  # created (or refused) once, here; each job then checks it
        ok, runner = asyncio.run(serve(store, held))
    # The store is closed and the lock released. What may be left is threads a stop
    # abandoned (a job cut off, a DNS lookup in a thread pool): the interpreter's exit
    # would wait for them, so the process ends with os._exit once flushed (govern.cli.run).
    STATE.fast_exit = True
    report({"event": "stopped", "ok": ok, "interrupted": runner.interrupted})
    if runner.fatal is not None:
        raise GovernError(runner.fatal, tip="The daemon stopped; no job runs without it.")
    if once and runner.interrupted:
        raise GovernError(
            "stopped before every job of the run had ended",
            tip="What the jobs that ended recorded is kept; run it again.",
        )
    if once and not ok:
        raise GovernError(
            "a job of the run failed (see its line above)",
            tip="Each failure is reported on its own line; the others' work is recorded.",
        )
    sys.stdout.flush()
