"""What every route of the dashboard shares: the store, the secrets, the CI providers, a clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from govern.store.models import utcnow
from govern.web.limits import MAX_BODY, Throttle
from govern.web.security import Secrets

if TYPE_CHECKING:
    from govern.ci.base import Provider
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
    # CI providers by configured name (webhooks and "verify now" use them); None: built from
    # the configuration on first use.
    providers: Mapping[str, Provider] | None = None
    provider_for: Callable[[str], Provider | None] | None = None
    index: IndexSettings | None = None  # where an isolated verification installs from
    clock: Callable[[], datetime] = utcnow
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    log: list[str] = field(default_factory=list)  # refused webhooks etc., newest last
    max_body: int = MAX_BODY  # bytes of a request body; more is a 413
    throttle: Throttle = field(default_factory=Throttle)  # failed tokens per client

    def verifier(self) -> Verifier:
        """A verifier over this state's store, providers and index settings.

        Without a ``provider_for`` (webhooks only conclude runs already started), it
        starts nothing.
        """
        from govern.service.verify import Verifier

        provider_for = self.provider_for or (lambda _profile: None)
        return Verifier(
            self.store,
            provider_for=provider_for,
            providers=self.providers or {},
            index=self.index,
            attempts=self.config.verify_attempts if self.config else 3,
            clock=self.clock,
        )

    def remember(self, task: asyncio.Task[Any]) -> None:
        """Keep a background task alive until it ends."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
