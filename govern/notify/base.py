"""What a reminder needs from a channel: a message in, what the other side answered out.

Notes: docs/internals.md#notify.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from govern.forge.base import Marker, safe_key

__all__ = [
    "Message",
    "Notifier",
    "Searchable",
    "Skipped",
    "repository_key",
    "safe_key",
]


@dataclass(frozen=True, slots=True)
class Message:
    """One message, rendered once for every channel (:mod:`govern.notify.templates`).

    ``key`` is the dedupe key: the outbox row's, the webhook's ``Idempotency-Key``, the
    seed of the email's ``Message-ID`` and the issue comment's marker. ``marker`` is that
    marker, signed with the store's secret by the service that sends the message
    (:func:`govern.service.remind.deliver`); a channel that is searched needs it.
    """

    key: str
    kind: str  # reminder, digest: the marker's kind on a forge
    subject: str
    text: str  # plain text: the email's body, the chat message
    markdown: str  # the issue comment
    links: tuple[str, ...] = ()  # where the issue channel looks for the issue to comment on
    marker: Marker | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A channel that has nowhere to send this message, and why (a value, not an error)."""

    reason: str


class Notifier(Protocol):
    """One channel. ``send`` raises :class:`NotifyError` (or a subclass) and nothing else."""

    name: str  # "issue", "webhook", "email": the channel's name in [tool.govern.notify]

    def target(self, message: Message) -> str | Skipped:
        """Where ``message`` would go, as shown to people (never a secret), or why nowhere."""
        ...

    async def send(self, message: Message) -> dict[str, Any]:
        """Deliver ``message``; what the other side answered (stored in the outbox row)."""
        ...


@runtime_checkable
class Searchable(Notifier, Protocol):
    """A channel whose messages can be found again (by the marker the message carries)."""

    async def find(self, message: Message) -> dict[str, Any] | None:
        """What :meth:`send` would have answered, if ``message`` is there; else None."""
        ...


def repository_key(name: str) -> str:
    """A repository's name as a marker's or a dedupe key's part: itself when it is short
    and plain (``vllm-project/vllm``), else a hash of it."""
    if len(name) <= 100 and name and safe_key(name) == name:
        return name
    return "repo-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
