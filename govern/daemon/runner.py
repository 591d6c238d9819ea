"""The daemon's loop: the jobs once at start, then each on its interval (APScheduler)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from govern.daemon.jobs import Job, JobOutcome, in_thread
from govern.daemon.schedule import describe, jitter
from govern.errors import GovernError

Report = Callable[[dict[str, Any]], None]

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(when: datetime | None) -> str | None:
    return (
        when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if when else None
    )


class _Forward(logging.Handler):
    """APScheduler's own warnings (a run skipped because the last one still runs, a run
    missed), into the daemon's report rather than a bare logging line."""

    def __init__(self, report: Report) -> None:
        super().__init__(logging.WARNING)
        self._report = report

    def emit(self, record: logging.LogRecord) -> None:
        self._report(
            {
                "event": "scheduler",
                "level": record.levelname.lower(),
                "message": record.getMessage(),
            }
        )


class Daemon:
    """Runs ``jobs`` (name: (job, seconds between runs)) one at a time, until stopped.

    At start each job runs once, in the order given; then each runs on its interval with
    jitter (:func:`~govern.daemon.schedule.jitter`). A job never runs beside itself or
    another job: they share the store. A job that raises is reported and runs again at
    its next time. :meth:`stop` (or SIGTERM/SIGINT, when run in the main thread) lets
    the running job finish within ``grace`` seconds, then cancels it.
    """

    def __init__(
        self,
        jobs: Mapping[str, tuple[Job, float]],
        report: Report,
        *,
        grace: float = 60.0,
        debug: bool = False,
        guard: Callable[[], None] | None = None,
    ) -> None:
        self.jobs = dict(jobs)
        # Checked before each run: a GovernError from it (the store's lock lost, its schema
        # migrated by another govern) stops the daemon, with ``fatal`` set to its message.
        self.guard = guard
        self.fatal: str | None = None
        self.interrupted = False  # stopped before the jobs at start had all run
        self.report = report
        self.grace = grace
        self.debug = debug
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._one = asyncio.Lock()
        self._running: set[asyncio.Task[Any]] = set()
        self._scheduler: Any = None

    def stop(self) -> None:
        """Ask the daemon to stop (from any thread): the running job finishes first."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    def _signalled(self, signum: int) -> None:
        assert self._stop is not None
        name = signal.Signals(signum).name
        if self._stop.is_set():  # the second one: do not wait for the job
            self.report({"event": "stopping", "signal": name, "now": True})
            for task in self._running:
                task.cancel()
            return
        self.report({"event": "stopping", "signal": name, "now": False})
        self._stop.set()

    async def run(self, *, once: bool = False) -> bool:
        """Run until stopped (or, with ``once``, run each job once); whether every run at
        start was ok."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        installed = []
        for signum in _SIGNALS:
            try:
                self._loop.add_signal_handler(signum, self._signalled, signum)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                continue
            installed.append(signum)
        scheduler_log = logging.getLogger("apscheduler")
        forward = _Forward(self.report)
        saved = (scheduler_log.level, scheduler_log.propagate)
        scheduler_log.addHandler(forward)
        scheduler_log.setLevel(logging.WARNING)
        scheduler_log.propagate = False
        try:
            ok = True
            for name in self.jobs:
                if self._stop.is_set():  # a job of the first round is left to run
                    self.interrupted = True
                    break
                task = asyncio.create_task(self._run(name))
                if not await self._ended(task):
                    ok = False
                    self.interrupted = True
                    break
                ok = task.result() and ok
            if once or self._stop.is_set():
                return ok and self.fatal is None
            self._start_scheduler()
            await self._stop.wait()
            return ok and self.fatal is None
        finally:
            if self._scheduler is not None:
                self._scheduler.pause()  # no new runs; shutting down would cancel the running one
            await self._drain()
            if self._scheduler is not None:
                self._scheduler.shutdown(wait=False)
                self._scheduler = None
            scheduler_log.removeHandler(forward)
            scheduler_log.setLevel(saved[0])
            scheduler_log.propagate = saved[1]
            for signum in installed:
                self._loop.remove_signal_handler(signum)

    def _start_scheduler(self) -> None:
        scheduler = AsyncIOScheduler(event_loop=self._loop, timezone=UTC)
        for name, (_job, every) in self.jobs.items():
            scheduler.add_job(
                self._scheduled,
                IntervalTrigger(seconds=every, jitter=jitter(every), timezone=UTC),
                args=(name,),
                id=name,
                name=name,
                max_instances=1,  # a run still going when the next is due: that one is skipped
                coalesce=True,  # runs missed while the machine slept: one run, not many
                misfire_grace_time=int(max(every, 1)),
            )
        scheduler.start()
        self._scheduler = scheduler

    def next_run(self, name: str) -> datetime | None:
        """When ``name`` runs next (None before the scheduler starts, or when stopping)."""
        if self._scheduler is None:
            return None
        job = self._scheduler.get_job(name)
        return job.next_run_time if job is not None else None

    def _wake(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Make the jobs a run found work for due now (a candidate found is verified, a
        pass proposed, without waiting for their own intervals, which start again from
        that run); the ones woken. At start the first round runs them in order anyway."""
        if self._scheduler is None or self._stop is None or self._stop.is_set():
            return ()
        woken = []
        for name in names:
            if name in self.jobs and self._scheduler.get_job(name) is not None:
                self._scheduler.modify_job(name, next_run_time=_now())
                woken.append(name)
        return tuple(woken)

    async def _scheduled(self, name: str) -> None:
        """A run the scheduler starts; cut off at the end of the grace period, it ends
        quietly (the daemon reports the cut; APScheduler would log it as a job error)."""
        with contextlib.suppress(asyncio.CancelledError):
            await self._run(name)

    async def _run(self, name: str) -> bool:
        """One run of job ``name``, reported; whether it was ok."""
        assert self._stop is not None
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            async with self._one:
                if self._stop.is_set():
                    return True  # due while stopping: not started
                if self.guard is not None:
                    guard = self.guard
                    try:  # in a thread: a database that stalls must not deafen the loop
                        await in_thread(lambda _stop: guard(), "guard")
                    except GovernError as exc:
                        self.fatal = exc.message
                        self.report({"event": "fatal", "job": name, "message": exc.message})
                        self._stop.set()
                        return False
                job, every = self.jobs[name]
                started = _now()
                began = time.monotonic()
                try:
                    outcome = await job()
                except GovernError as exc:
                    outcome = JobOutcome(False, exc.message)
                except Exception as exc:  # a bug must not end the daemon: the next run may work
                    if self.debug:
                        traceback.print_exc(file=sys.stderr)
                    outcome = JobOutcome(False, f"internal error: {type(exc).__name__}: {exc}")
                elapsed = time.monotonic() - began
            then = self._wake(outcome.then)
            self.report(
                {
                    "event": "job",
                    "job": name,
                    "ok": outcome.ok,
                    "started_at": _stamp(started),
                    "duration_seconds": round(elapsed, 3),
                    "summary": outcome.summary,
                    "every": describe(every),
                    "next_run_at": _stamp(self.next_run(name)),
                    "then": list(then),
                    "detail": outcome.detail,
                }
            )
            return outcome.ok
        finally:
            if task is not None:
                self._running.discard(task)

    async def _ended(self, task: asyncio.Task[bool]) -> bool:
        """Wait for a run at start; on a stop meanwhile, for the grace period at most.
        Whether it ended by itself (not cancelled)."""
        assert self._stop is not None
        stopping = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not task.done():
            await self._drain({task})
        return not task.cancelled()

    async def _drain(self, tasks: set[asyncio.Task[Any]] | None = None) -> None:
        """Let the running job finish within the grace period, then cancel it."""
        pending = {
            task
            for task in (self._running if tasks is None else tasks)
            if task is not asyncio.current_task() and not task.done()
        }
        if not pending:
            return
        _done, late = await asyncio.wait(pending, timeout=self.grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.gather(*late, return_exceptions=True)
            self.report({"event": "cancelled", "jobs": len(late), "after_seconds": self.grace})
