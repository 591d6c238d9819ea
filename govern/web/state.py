"""What every route of the dashboard shares: the store, the secrets, the CI providers, a clock."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from govern.store.columns import utcnow
from govern.web.limits import MAX_BODY, Throttle
from govern.web.security import Secrets

LOG_LINES = 200

if TYPE_CHECKING:
    from govern.application import CIProviders
    from govern.config import Config
    from govern.index.pipconfig import IndexSettings
    from govern.service.verify import Verifier
    from govern.store.db import Store


@dataclass
class AppState:
    """The dashboard's dependencies (injected, so tests can give their own)."""

    store: Store
    secrets: Secrets
    config: Config | None = None
    # The CI providers (webhooks and "verify now" use them); None: CI is off.
    ci: CIProviders | None = None
    index: IndexSettings | None = None  # where an isolated verification installs from
    clock: Callable[[], datetime] = utcnow
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # What background actions said (verify now, propose now), newest last; the oldest are
    # dropped, so a long-running server keeps at most LOG_LINES of them.
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    max_body: int = MAX_BODY  # bytes of a request body; more is a 413
    throttle: Throttle = field(default_factory=Throttle)  # failed tokens per client

    def verifier(self) -> Verifier:
        """A verifier over this state's store, CI providers and index settings, built as the
        CLI builds it (:func:`govern.application.verifier`)."""
        from govern import application

        return application.verifier(
            self.store, self.config, self.ci, index=self.index, clock=self.clock
        )

    def remember(self, task: asyncio.Task[Any]) -> None:
        """Keep a background task alive until it ends."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
