"""The daemon's jobs: sync, poll and verify, each an awaitable that says how it went."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from govern.errors import GovernError

if TYPE_CHECKING:
    from govern.index.candidates import Profile
    from govern.index.pipconfig import IndexSettings
    from govern.service.verify import VerifyResult
    from govern.store.db import Store
    from govern.store.dbapi import RawStore


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one run of a job went: ``ok`` is False when it could not do its work."""

    ok: bool
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)


Job = Callable[[], Awaitable[Outcome]]


class PollJob:
    """``govern poll`` over one set of HTTP connections kept for the daemon's life.

    Use it with ``async with``: leaving closes the connections. A poll whose every
    project failed is not ok (the index is unreachable), as ``govern poll`` exits 2.
    """

    def __init__(self, store: Store, settings: IndexSettings, profiles: Sequence[Profile]):
        from govern.index.ondemand import OnDemandClient

        self._store = store
        self._profiles = list(profiles)
        self._pages = OnDemandClient(settings)
        self._stack = AsyncExitStack()
        self._raw: RawStore | None = None

    async def __aenter__(self) -> PollJob:
        await self._stack.enter_async_context(self._pages)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def __call__(self) -> Outcome:
        from govern.service.poll import poll
        from govern.store.dbapi import RawStore

        if self._raw is None:
            self._raw = RawStore.of(self._store)
        result = await poll(self._raw, self._pages, self._profiles)
        summary = result.summary()
        if result.unavailable:
            _package, reason = result.failures[0]
            summary += f" (the index answered none: {reason})"
        return Outcome(not result.unavailable, summary, result.as_dict())


class SyncJob:
    """``govern track DIR`` for each repository the daemon keeps in sync.

    Each runs in a worker thread (git and the ORM block). A repository that cannot be
    read is reported and left as it was; the others go on.
    """

    def __init__(self, store: Store, roots: Sequence[Path], config_file: Path | None = None):
        self._store = store
        self._roots = list(roots)
        self._config_file = config_file

    async def __call__(self) -> Outcome:
        return await asyncio.to_thread(self._sync)

    def _sync(self) -> Outcome:
        from govern.config import load_config
        from govern.service.track import TrackOptions, track

        repositories: list[dict[str, Any]] = []
        failed: list[str] = []
        for root in self._roots:
            try:
                if not root.is_dir():
                    raise GovernError(f"{root} is not a directory (moved or unmounted?)")
                config = load_config(root, self._config_file)
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
            summary += f", {len(failed)} failed ({'; '.join(failed)})"
        return Outcome(not failed, summary, {"repositories": repositories})


def verify_outcome(result: VerifyResult) -> Outcome:
    """A ``govern verify`` call (runs started, runs still going, conclusions) as an outcome."""
    concluded = ", ".join(f"{n} {c}" for c, n in sorted(result.concluded.items()) if n)
    summary = f"{result.started} runs started, {result.running} still running" + (
        f", concluded: {concluded}" if concluded else ""
    )
    if result.errors:
        summary += f"; {len(result.errors)} errors (first: {result.errors[0]})"
    return Outcome(not result.auth_failed, summary, result.as_dict())
