"""An index client opened at its first fetch, for polls that may have nothing to ask.

A poll asks only about projects whose stored answer is no longer fresh (the index's
``Cache-Control``). When every page is still fresh there is nothing to fetch, and opening
the HTTP clients would cost the start-up of httpx and TLS for no request: this client
imports :mod:`govern.index.client` and opens its connections only when a fetch comes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from govern.index.model import FetchResult, Validators
from govern.index.pipconfig import IndexSettings

if TYPE_CHECKING:
    from govern.index.client import IndexClient


class OnDemandClient:
    """:class:`~govern.index.client.IndexClient`'s ``fetch_many``, opened on first use.

    Use it with ``async with``: leaving closes the connections it opened, if any.
    ``options`` are :class:`~govern.index.client.IndexClient`'s keyword arguments.
    """

    def __init__(self, settings: IndexSettings, *, connections: int = 16, **options: Any):
        self.settings = settings
        self._connections = connections
        self._options = options
        self._stack = AsyncExitStack()
        self._client: IndexClient | None = None

    async def __aenter__(self) -> OnDemandClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def fetch_many(
        self,
        names: Iterable[str],
        validators: Mapping[str, Validators] | None = None,
        *,
        on_done: Callable[[str, FetchResult], None] | None = None,
    ) -> dict[str, FetchResult]:
        """As :meth:`IndexClient.fetch_many`; the first call opens the HTTP clients."""
        if self._client is None:
            from govern.index.client import IndexClient, http_clients

            http = await self._stack.enter_async_context(http_clients(self._connections))
            self._client = IndexClient(http, self.settings, **self._options)
        return await self._client.fetch_many(names, validators, on_done=on_done)
