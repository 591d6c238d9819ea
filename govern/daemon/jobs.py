"""The daemon's jobs: sync, poll, verify, propose and digest, each an awaitable that says how
it went."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from govern import application
from govern.errors import GovernError
from govern.exclusions.states import RunState
from govern.service.outcome import Outcome, ProposeResult
from govern.service.poll import poll_index
from govern.service.track import TrackOptions, track
from govern.service.verify import VerifyOptions, VerifyResult
from govern.text import line

if TYPE_CHECKING:
    from govern.config import Config
    from govern.index.pipconfig import IndexSettings
    from govern.index.profiles import Profile
    from govern.service.remind import DigestResult
    from govern.store.db import Store


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How one run of a job went: ``ok`` is False when it could not do its work; ``then``
    names the jobs it made work for (a new candidate to verify, a pass to propose), which
    the daemon runs next rather than at their own time."""

    ok: bool
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)
    then: tuple[str, ...] = ()


Job = Callable[[], Awaitable[JobOutcome]]
T = TypeVar("T")


async def in_thread(work: Callable[[threading.Event], T], name: str) -> T:
    """``work(stop)`` in a thread of its own, awaited without blocking the event loop.

    The daemon's loop stays free to hear signals while a job waits on git, the network
    or a database lock. Cancelled (the daemon stopping), ``stop`` is set for ``work`` to
    end at its next safe point, and the thread is left behind: it is a daemon thread, so
    the process's exit never waits on it, and what it had not committed is rolled back
    by the database, as after any crash.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    stop = threading.Event()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def target() -> None:
        try:
            result = work(stop)
        except BaseException as exc:  # handed to the awaiting task, as to_thread does
            # SystemExit or KeyboardInterrupt from a job is the job's failure, not an order
            # to the daemon (which stops on its own signals only).
            failure = exc if isinstance(exc, Exception) else RuntimeError(repr(exc))
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(settle, lambda: done.set_exception(failure))
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, lambda: done.set_result(result))

    threading.Thread(target=target, name=f"govern-{name}", daemon=True).start()
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        stop.set()
        # Nobody awaits it now: an error it ends with is not "never retrieved".
        done.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
        raise


def run_until_stopped(make: Callable[[], Coroutine[Any, Any, T]], stop: threading.Event) -> T:
    """``asyncio.run(make())`` in this thread, the coroutine cancelled once ``stop`` is set."""

    async def main() -> T:
        task = asyncio.ensure_future(make())
        while not task.done():
            await asyncio.wait({task}, timeout=0.1)
            if stop.is_set() and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise asyncio.CancelledError
        return task.result()

    return asyncio.run(main())


def _names(items: Sequence[str], limit: int = 5, width: int = 160) -> str:
    """Names and versions for a log line, each made one visible, bounded line (they come
    from repositories and the index), at most ``limit`` then a count."""
    shown = [line(item, width) for item in items[:limit]]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more


class PollJob:
    """``govern poll``, in a thread with an event loop of its own (:func:`in_thread`).

    A poll whose every project failed is not ok (the index is unreachable), as
    ``govern poll`` exits 2. The HTTP connections open at the first request of each
    poll: at the daemon's intervals the index would have closed idle ones anyway.
    """

    def __init__(self, store: Store, settings: IndexSettings, profiles: Sequence[Profile]):
        self._store = store
        self._settings = settings
        self._profiles = list(profiles)

    async def __call__(self) -> JobOutcome:
        return await in_thread(self._poll, "poll")

    def _poll(self, stop: threading.Event) -> JobOutcome:
        result = run_until_stopped(
            lambda: poll_index(self._store, self._settings, self._profiles), stop
        )
        summary = result.summary()
        found = [f"{f['package']} {f['version']} for {f['clause']}" for f in result.found]
        if found:
            summary += f"; new: {_names(found)}"
        settled = [f"{s['package']} {s['clause']}" for s in result.newly_settled]
        if settled:
            summary += f"; settled: {_names(settled)}"
        if result.unavailable:
            _package, reason = result.failures[0]
            summary += f" (the index answered none: {line(reason, 300)})"
        then = ("verify",) if result.found else ()
        return JobOutcome(not result.unavailable, summary, result.as_dict(), then)


class SyncJob:
    """``govern track DIR`` for each repository the daemon keeps in sync.

    They run in a thread of the job's own (git and the ORM block). A repository that cannot be
    read is reported and left as it was; the others go on.
    """

    def __init__(self, store: Store, roots: Sequence[Path], config_file: Path | None = None):
        self._store = store
        self._roots = list(roots)
        self._config_file = config_file

    async def __call__(self) -> JobOutcome:
        return await in_thread(self._sync, "sync")

    def _sync(self, stop: threading.Event) -> JobOutcome:
        repositories: list[dict[str, Any]] = []
        failed: list[str] = []
        for root in self._roots:
            if stop.is_set():  # the daemon is stopping: the repositories done stay done
                break
            try:
                if not root.is_dir():
                    raise GovernError(f"{root} is not a directory (moved or unmounted?)")
                config = application.settings(self._config_file, root)
                result = track(self._store, root, None, config=config, options=TrackOptions())
            except GovernError as exc:
                failed.append(f"{root}: {exc.message}")
                repositories.append({"root": str(root), "error": exc.message})
                continue
            repositories.append(
                {
                    "root": str(root),
                    "repository": result.repository,
                    "commit": result.commit,
                    **result.counts.as_dict(),
                    "notes": list(result.notes),
                }
            )
        events = sum(int(r.get("events", 0)) for r in repositories)
        summary = f"{len(self._roots)} repositories, {events} events"
        if failed:
            summary += f", {len(failed)} failed ({_names(failed, limit=3, width=300)})"
        # A line added, back or changed may have a release out already: the poll looks now.
        fresh = any(r.get(k) for r in repositories for k in ("added", "restored", "changed"))
        then = ("poll",) if fresh else ()
        return JobOutcome(not failed, summary, {"repositories": repositories}, then)


class VerifyJob:
    """``govern verify`` without ``--wait``: new candidates' runs started, running ones
    collected (a run still going is collected at the next call)."""

    def __init__(
        self,
        store: Store,
        config: Config,
        settings: IndexSettings | None,
        options: VerifyOptions | None = None,  # default: every exclusion, every profile
    ):
        self._store = store
        self._config = config
        self._settings = settings
        self._options = options or VerifyOptions()

    async def __call__(self) -> JobOutcome:  # in a thread, as sync and poll: the loop stays free
        return verify_outcome(await in_thread(self._verify, "verify"))

    def _verify(self, stop: threading.Event) -> VerifyResult:
        return run_until_stopped(
            lambda: application.verify_once(
                self._store, self._config, self._settings, self._options
            ),
            stop,
        )


def verify_outcome(result: VerifyResult) -> JobOutcome:
    """A ``govern verify`` call (runs started, runs still going, conclusions) as an outcome."""
    concluded = ", ".join(f"{n} {c}" for c, n in sorted(result.concluded.items()) if n)
    summary = f"{result.started} runs started, {result.running} still running" + (
        f", concluded: {concluded}" if concluded else ""
    )
    ended = [
        f"{r['package']} {r['version']}"
        + ("" if r["kind"] == "candidate" else f" ({r['kind']} on {r['ran']})")
        + f" {r['conclusion']} => {r['verdict']}"
        for r in result.runs
    ]
    if ended:
        summary += f": {_names(ended)}"
    if result.errors:
        summary += f"; {len(result.errors)} errors (first: {line(result.errors[0], 300)})"
    then = ("propose",) if result.verdicts.get("passed") else ()
    return JobOutcome(not result.auth_failed, summary, result.as_dict(), then)


class ProposeJob:
    """``govern propose``: every verified exclusion's branch (and change request) sent once,
    failed sends retried when due, open change requests looked at for a merge or a close."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def __call__(self) -> JobOutcome:
        result = await in_thread(self._propose, "propose")
        return propose_outcome(result)

    def _propose(self, stop: threading.Event) -> ProposeResult:
        return run_until_stopped(
            lambda: application.propose_once(self._store, None, dry_run=False), stop
        )


# A requirement's name and extras, before its specifier (PEP 508's name, loosely: a line
# govern could not read this way is shown whole).
_NAME = re.compile(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*")


def _specifier(requirement: str | None) -> str:
    """``< 14.1.0`` from ``cupy-cuda13x < 14.1.0; python_version >= '3.10'``, as written."""
    if requirement is None:
        return "?"
    name = _NAME.match(requirement)
    spec = requirement[name.end() :] if name else requirement
    spec = spec.split(";", 1)[0].strip()
    return spec or requirement.strip()


def _sent(outcome: Outcome) -> str:
    """``cupy-cuda13x < 14.1.0 -> != 14.1.0 pushed govern/relax/...``: what was sent, where."""
    said = f"{outcome.ref.package} {_specifier(outcome.ref.requirement)} -> "
    said += _specifier(outcome.new)
    if outcome.url:
        said += f" opened {outcome.url}"
    elif outcome.branch:
        said += f" pushed {outcome.branch}"
    return said


def propose_outcome(result: ProposeResult) -> JobOutcome:
    """A propose run as an outcome: "sent" names only what this run sent; a proposal sent
    before and read again is "already proposed"."""
    sent = [p for p in result.proposals if p.state == RunState.SENT and p.sent_now]
    again = [p for p in result.proposals if p.state == RunState.SENT and not p.sent_now]
    rest = [p for p in result.proposals if p.state != RunState.SENT]
    parts = []
    if sent:
        parts.append(f"{len(sent)} sent: {_names([_sent(p) for p in sent])}")
    if again:
        parts.append(f"{len(again)} already proposed")
    states = [p.state for p in rest]
    for state in sorted(set(states)):
        named = [f"{p.ref.package} {p.ref.clause}" for p in rest if p.state == state]
        parts.append(f"{len(named)} {state}: {_names(named)}")
    summary = "; ".join(parts) or "nothing to propose"
    if result.closed:
        summary += f"; {len(result.closed)} change requests closed or merged"
    return JobOutcome(not result.failed, summary, result.as_dict())


class DigestJob:
    """Each repository's pending-relaxations issue (edited only when its text changed) and
    digest (once per period), as its ``[tool.govern.notify]`` says."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def __call__(self) -> JobOutcome:
        result = await in_thread(self._digest, "digest")
        return JobOutcome(not result.failed, result.summary(), result.as_dict())

    def _digest(self, stop: threading.Event) -> DigestResult:
        return run_until_stopped(lambda: application.digest_once(self._store), stop)
