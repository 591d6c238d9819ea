"""The daemon's loop (:class:`govern.daemon.runner.Daemon`) with jobs of the tests' own.

The jobs here are plain coroutines that record when they ran; the real jobs (sync, poll,
verify against a local index and a command CI) are in ``test_daemon_cli.py``.
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import threading
import time
from typing import Any

import pytest

from govern.daemon.jobs import Job, JobOutcome
from govern.daemon.runner import Daemon
from govern.daemon.schedule import describe, jitter, parse_every
from govern.errors import GovernError, UsageError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("90", 90), ("15m", 900), ("1h", 3600), ("1.5h", 5400), ("2d", 172800)],
)
def test_intervals_read_as_seconds(text: str, seconds: float) -> None:
    assert parse_every(text, "--poll-every") == seconds


@pytest.mark.parametrize("text", ["off", "OFF", "never", "0"])
def test_off_turns_a_job_off(text: str) -> None:
    assert parse_every(text, "--sync-every") is None


@pytest.mark.parametrize("text", ["soon", "5 minutes", "-1m", "1w", "", "0.5s", "3000000d", "367d"])
def test_a_bad_interval_is_a_usage_error_with_a_tip(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_every(text, "--poll-every")
    assert "--poll-every" in raised.value.message
    assert raised.value.tip


def test_intervals_read_back_as_given_and_jitter_is_bounded() -> None:
    assert [describe(s) for s in (90, 900, 3600, 5400, 86400, None)] == [
        "90s",
        "15m",
        "1h",
        "90m",
        "1d",
        "off",
    ]
    assert jitter(60) == 6
    assert jitter(86400) == 300  # never more than 5 minutes


class _Recorder:
    """Jobs that record (name, start, end) and can be told to fail or take time."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, float, float]] = []
        self.reports: list[dict[str, Any]] = []

    def job(self, name: str, *, takes: float = 0.0, fails: BaseException | None = None) -> Job:
        async def run() -> JobOutcome:
            began = time.monotonic()
            await asyncio.sleep(takes)
            self.runs.append((name, began, time.monotonic()))
            if fails is not None:
                raise fails
            return JobOutcome(True, f"{name} done", {"n": len(self.runs)})

        return run

    def report(self, event: dict[str, Any]) -> None:
        self.reports.append(event)

    def jobs(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.reports if r["event"] == "job" and r["job"] == name]


def test_once_runs_each_job_once_in_order() -> None:
    seen = _Recorder()
    daemon = Daemon(
        {
            "sync": (seen.job("sync"), 3600),
            "poll": (seen.job("poll"), 3600),
            "verify": (seen.job("verify"), 3600),
        },
        seen.report,
    )
    assert asyncio.run(daemon.run(once=True)) is True
    assert [name for name, _, _ in seen.runs] == ["sync", "poll", "verify"]
    first = seen.jobs("poll")[0]
    assert first["ok"] is True
    assert first["summary"] == "poll done"
    assert first["every"] == "1h"
    assert first["next_run_at"] is None  # with --once nothing is scheduled


def _run_for(daemon: Daemon, seconds: float) -> bool:
    async def go() -> bool:
        asyncio.get_running_loop().call_later(seconds, daemon.stop)
        return await daemon.run()

    return asyncio.run(go())


def test_jobs_run_again_on_their_interval_one_at_a_time() -> None:
    seen = _Recorder()
    daemon = Daemon(
        {"poll": (seen.job("poll", takes=0.3), 1), "sync": (seen.job("sync", takes=0.3), 1)},
        seen.report,
    )
    assert _run_for(daemon, 3.6) is True
    polls = seen.jobs("poll")
    assert len(polls) >= 2, seen.reports
    assert polls[-1]["next_run_at"] is not None
    spans = sorted((began, ended) for _, began, ended in seen.runs)
    for (_, ended), (began, _) in itertools.pairwise(spans):
        assert began >= ended - 0.01, "two jobs ran at once"


def test_a_run_that_finds_work_for_the_next_job_runs_it_at_once() -> None:
    """A poll that finds a candidate has verify run now, not at verify's own time; a
    poll that finds nothing wakes nobody."""
    seen = _Recorder()
    polls = 0

    async def poll() -> JobOutcome:
        nonlocal polls
        polls += 1
        seen.runs.append(("poll", time.monotonic(), time.monotonic()))
        return JobOutcome(True, f"poll {polls}", then=("verify", "absent") if polls == 2 else ())

    daemon = Daemon({"poll": (poll, 1), "verify": (seen.job("verify"), 3600)}, seen.report)
    assert _run_for(daemon, 3.5) is True
    names = [name for name, _, _ in seen.runs]
    assert names.count("verify") == 2, names  # at start, then woken by the second poll
    woken = names.index("verify", 2)
    assert names[woken - 1] == "poll"
    reports = seen.jobs("poll")
    assert [r["then"] for r in reports[:3]] == [[], ["verify"], []]  # only jobs it has
    assert seen.jobs("verify")[1]["next_run_at"] > reports[1]["started_at"]


def test_once_wakes_nobody() -> None:
    seen = _Recorder()

    async def poll() -> JobOutcome:
        return JobOutcome(True, "found", then=("verify",))

    daemon = Daemon({"poll": (poll, 60), "verify": (seen.job("verify"), 60)}, seen.report)
    assert asyncio.run(daemon.run(once=True)) is True
    assert [name for name, _, _ in seen.runs] == ["verify"]  # its turn in the round, once
    assert seen.jobs("poll")[0]["then"] == []


def test_a_failing_job_is_reported_and_runs_again() -> None:
    seen = _Recorder()
    daemon = Daemon(
        {
            "poll": (seen.job("poll", fails=RuntimeError("boom")), 1),
            "sync": (seen.job("sync", fails=GovernError("repo gone")), 1),
        },
        seen.report,
    )
    assert _run_for(daemon, 2.6) is False
    polls = seen.jobs("poll")
    assert len(polls) >= 2  # the daemon went on
    assert polls[0]["ok"] is False
    assert polls[0]["summary"] == "internal error: RuntimeError: boom"
    assert seen.jobs("sync")[0]["summary"] == "repo gone"


def test_stop_lets_the_running_job_finish() -> None:
    seen = _Recorder()
    daemon = Daemon({"poll": (seen.job("poll", takes=0.8), 3600)}, seen.report, grace=5)

    async def go() -> bool:
        asyncio.get_running_loop().call_later(0.2, daemon.stop)
        return await daemon.run()

    began = time.monotonic()
    assert asyncio.run(go()) is True
    assert seen.jobs("poll")[0]["ok"] is True  # finished, not cut off
    assert time.monotonic() - began < 3


def test_a_job_at_start_longer_than_the_grace_period_is_cancelled() -> None:
    seen = _Recorder()
    daemon = Daemon(
        {"sync": (seen.job("sync", takes=30), 1), "poll": (seen.job("poll"), 1)},
        seen.report,
        grace=0.2,
    )
    began = time.monotonic()
    assert _run_for(daemon, 0.5) is False
    assert time.monotonic() - began < 5
    assert [r for r in seen.reports if r["event"] == "cancelled"] == [
        {"event": "cancelled", "jobs": 1, "after_seconds": 0.2}
    ]
    assert seen.runs == []  # neither the cut-off sync nor a poll after the stop


def test_a_scheduled_job_longer_than_the_grace_period_is_cancelled_quietly() -> None:
    seen = _Recorder()
    calls = 0

    async def slower_each_time() -> JobOutcome:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0 if calls == 1 else 30)
        return JobOutcome(True, f"call {calls}")

    daemon = Daemon({"poll": (slower_each_time, 1)}, seen.report, grace=0.3)
    began = time.monotonic()
    assert _run_for(daemon, 1.8) is True  # the run at start was ok
    assert time.monotonic() - began < 6
    assert calls == 2
    assert [r["summary"] for r in seen.jobs("poll")] == ["call 1"]
    assert next(r for r in seen.reports if r["event"] == "cancelled")["jobs"] == 1
    # The cut is the daemon's to report: APScheduler would log it as a job error.
    assert [r for r in seen.reports if r["event"] == "scheduler"] == []


def test_sigterm_stops_after_the_job_and_a_second_stops_at_once() -> None:
    seen = _Recorder()
    daemon = Daemon({"poll": (seen.job("poll", takes=5), 3600)}, seen.report, grace=30)

    async def go() -> bool:
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, signal.raise_signal, signal.SIGTERM)
        loop.call_later(0.6, signal.raise_signal, signal.SIGTERM)
        return await daemon.run()

    began = time.monotonic()
    assert asyncio.run(go()) is False  # the job at start was cancelled
    assert time.monotonic() - began < 3
    stopping = [r for r in seen.reports if r["event"] == "stopping"]
    assert [r["now"] for r in stopping] == [False, True]
    assert seen.jobs("poll") == []  # cut off: no report of a run that did not end
    assert signal.getsignal(signal.SIGTERM) is not None


def test_a_stop_during_the_first_round_marks_it_interrupted() -> None:
    seen = _Recorder()
    daemon = Daemon(
        {"sync": (seen.job("sync", takes=0.5), 60), "poll": (seen.job("poll"), 60)},
        seen.report,
    )

    async def go() -> bool:
        asyncio.get_running_loop().call_later(0.1, daemon.stop)
        return await daemon.run(once=True)

    asyncio.run(go())
    assert daemon.interrupted
    assert [name for name, _, _ in seen.runs] == ["sync"]  # ended; poll never started


def test_a_guard_that_hangs_does_not_deafen_the_daemon() -> None:
    """The guard asks the database; a stalled one must not keep the loop from stopping."""
    seen = _Recorder()
    daemon = Daemon(
        {"poll": (seen.job("poll"), 60)}, seen.report, grace=0.2, guard=lambda: time.sleep(30)
    )
    began = time.monotonic()
    assert _run_for(daemon, 0.3) is False
    assert time.monotonic() - began < 3
    assert seen.runs == []


def test_a_guard_that_fails_stops_the_daemon_with_its_message() -> None:
    seen = _Recorder()
    checks = 0

    def guard() -> None:
        nonlocal checks
        checks += 1
        if checks > 1:
            raise GovernError("the lock is gone")

    daemon = Daemon(
        {"sync": (seen.job("sync"), 1), "poll": (seen.job("poll"), 1)}, seen.report, guard=guard
    )
    began = time.monotonic()
    assert asyncio.run(daemon.run()) is False  # stops by itself: no stop() needed
    assert time.monotonic() - began < 5
    assert daemon.fatal == "the lock is gone"
    assert [name for name, _, _ in seen.runs] == ["sync"]
    assert {"event": "fatal", "job": "poll", "message": "the lock is gone"} in seen.reports


def test_in_thread_keeps_the_loop_free_and_stops_the_work_when_cancelled() -> None:
    from govern.daemon.jobs import in_thread

    stopped = threading.Event()

    def work(stop: threading.Event) -> str:
        while not stop.wait(0.05):  # a blocking wait, as git or a database lock
            pass
        stopped.set()
        return "ended"

    async def go() -> float:
        task = asyncio.create_task(in_thread(work, "test"))
        ticks = 0
        for _ in range(5):  # the loop runs while the thread blocks
            await asyncio.sleep(0.02)
            ticks += 1
        began = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert ticks == 5
        return time.monotonic() - began

    assert asyncio.run(go()) < 0.5
    assert stopped.wait(2)


def test_in_thread_hands_back_results_and_errors() -> None:
    from govern.daemon.jobs import in_thread

    def fails(stop: threading.Event) -> None:
        raise GovernError("no repository")

    def exits(stop: threading.Event) -> None:
        raise SystemExit(3)  # a job's, not an order to the daemon

    async def go() -> str:
        with pytest.raises(GovernError, match="no repository"):
            await in_thread(fails, "test")
        with pytest.raises(RuntimeError, match="SystemExit"):
            await in_thread(exits, "test")
        return await in_thread(lambda stop: "fine", "test")

    assert asyncio.run(go()) == "fine"
