"""Reminders, the pending-relaxations issue and the digest, each sent once through the outbox.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from govern.config import Config, ProposeConfig, load_config
from govern.errors import GovernError
from govern.exclusions.notices import Overview
from govern.exclusions.states import (
    EventKind,
    OutboxAction,
    OutboxState,
    ProposalKind,
    RunState,
    Via,
)
from govern.forge.base import Forge
from govern.notify import pending, templates
from govern.notify.base import (
    Message,
    Notifier,
    Searchable,
    Skipped,
    repository_key,
    safe_key,
)
from govern.service import outbox
from govern.store import events, notices, proposals
from govern.store import outbox as stored_outbox
from govern.store.db import Store
from govern.store.outbox import KeyKind, key_prefix, on_channel, outbox_key
from govern.store.proposals import Work

__all__ = ["DigestResult", "Digester", "Reminded", "remind"]


@dataclass(frozen=True, slots=True)
class Reminded:
    """How one reminder went: sent, failed (retried later), skipped or dry-run; one line
    per channel in ``message``; the issue comment's URL when there is one."""

    state: RunState
    message: str
    url: str | None = None
    body: str | None = None
    sent_now: bool = False  # this call sent it on some channel (not: found sent before)


def _line(name: str, where: str, done: outbox.Delivered) -> str:
    """One channel's part of the outcome message."""
    head = f"{name} {where}"
    if done.state is OutboxState.SENT:
        if done.result.get("unconfirmed"):
            return f"{head}: unconfirmed (a run died while sending it; not sent again)"
        if done.result.get("found"):
            return f"{head}: found (sent by a run that died before recording it)"
        return f"{head}: {'sent' if done.sent_now else 'already sent'}"
    if done.state is OutboxState.DEAD:
        return f"{head}: gave up after every attempt failed: {done.error}"
    if done.elsewhere:
        return f"{head}: another run is sending it; left to that run"
    return f"{head}: failed, tried again later: {done.error}"


def _state(sent: bool, failed: bool, aside: bool) -> RunState:
    """A run's state over its channels: a failure counts; a channel another run is
    sending (this run stood aside) does not, and is said when nothing else was sent."""
    if failed:
        return RunState.FAILED
    return RunState.STOOD_ASIDE if aside and not sent else RunState.SENT


async def deliver(
    store: Store,
    notifier: Notifier,
    message: Message,
    *,
    action: OutboxAction,
    now: datetime,
    proposal_id: int | None = None,
) -> outbox.Delivered:
    """``message`` to one channel through the outbox, under ``<message key>:<channel>``,
    with that key's marker signed by the store."""
    key = on_channel(message.key, notifier.name)
    one = replace(message, key=key, marker=outbox.seal(store).marker(message.kind, safe_key(key)))

    async def send() -> dict[str, Any]:
        return await notifier.send(one)

    find: outbox.Find | None = None
    if isinstance(notifier, Searchable):
        searchable = notifier

        async def look() -> dict[str, Any] | None:
            return await searchable.find(one)

        find = look
    return await outbox.deliver(
        store,
        key=one.key,
        action=action,
        send=send,
        find=find,
        proposal_id=proposal_id,
        now=now,
        resend_unconfirmed=False,
    )


async def remind(
    store: Store,
    work: Work,
    notifiers: Sequence[Notifier] | None,
    *,
    now: datetime,
    dry_run: bool = False,
    blocked: str | None = None,
) -> Reminded:
    """Remind the people of ``work`` that its candidate passed, on every channel, once;
    ``blocked``: why govern did not propose the change itself (said in the message)."""
    if notifiers is None:
        return Reminded(
            RunState.SKIPPED,
            "this run was built without notifiers (govern propose builds them)",
        )
    if not notifiers:
        return Reminded(RunState.SKIPPED, "no channel: channels = [] in [tool.govern.notify]")
    message = templates.reminder(work, blocked=blocked)
    targets = [(notifier, notifier.target(message)) for notifier in notifiers]
    skipped = [f"{n.name}: skipped, {t.reason}" for n, t in targets if isinstance(t, Skipped)]
    if dry_run:
        would = [f"{n.name} {t}: would be sent" for n, t in targets if isinstance(t, str)]
        return Reminded(RunState.DRY_RUN, "; ".join([*would, *skipped]), body=message.text)
    if len(skipped) == len(targets):
        return Reminded(RunState.SKIPPED, "; ".join(skipped))
    proposal_id = _proposal(store, work, now)
    lines: list[str] = []
    sent: list[str] = []
    failed = aside = sent_now = False
    url: str | None = None
    for notifier, where in targets:
        if isinstance(where, Skipped):
            continue
        done = await deliver(
            store,
            notifier,
            message,
            action=OutboxAction.remind(notifier.name),
            now=now,
            proposal_id=proposal_id,
        )
        lines.append(_line(notifier.name, where, done))
        if done.state is OutboxState.SENT:
            sent.append(notifier.name)
            sent_now = sent_now or done.sent_now
            url = url or (done.result.get("url") if notifier.name == "issue" else None)
        elif done.elsewhere:
            aside = True
        else:
            failed = True
    if sent:
        _reminded(store, work, proposal_id, sent, url, now)
    return Reminded(
        _state(bool(sent), failed, aside),
        "; ".join([*lines, *skipped]),
        url=url,
        sent_now=sent_now,
    )


def _proposal(store: Store, work: Work, now: datetime) -> int:
    """The reminder's proposal row (one per exclusion and version), made once."""
    relaxation = work.relaxation
    with store.session(write=True) as session:
        return proposals.open_proposal(
            session,
            key=outbox_key(KeyKind.REMINDER, work.ref.key, work.version),
            work=work,
            kind=ProposalKind.REMINDER,
            via=Via.REMIND,
            now=now,
            old=work.ref.requirement,
            new=relaxation.requirement if relaxation else None,
        )


def _reminded(
    store: Store, work: Work, proposal_id: int, sent: list[str], url: str | None, now: datetime
) -> None:
    """The first delivery of a reminder: its event, once, and the exclusion proposed."""
    with store.session(write=True) as session:
        if not proposals.mark_sent(
            session, proposal_id=proposal_id, at=now, url=url, only_first=True
        ):
            return  # its event went with the first delivery
        detail: dict[str, Any] = {"version": work.version, "via": Via.REMIND, "channels": sent}
        if url:
            detail["url"] = url
        # A verified exclusion is proposed now (the lifecycle's table).
        events.record(session, work.exclusion_id, EventKind.REMINDED, detail, now)


# -- the pending issue and the digest ------------------------------------------------------


@dataclass(slots=True)
class DigestResult:
    """Per repository: how its pending issue and its digest went (when configured)."""

    repositories: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Something failed (and is tried again at the next run)."""
        return any(
            "error" in item
            or any(
                isinstance(part, dict) and part.get("state") == RunState.FAILED
                for part in item.values()
            )
            for item in self.repositories
        )

    def summary(self) -> str:
        """``2 repositories: digest sent 2, pending issue updated 1``, as the daemon says."""
        said: dict[str, int] = {}
        for item in self.repositories:
            for part in ("pending_issue", "digest"):
                if part in item:
                    label = f"{part.replace('_', ' ')} {item[part]['state']}"
                    said[label] = said.get(label, 0) + 1
            if "error" in item:
                said["failed"] = said.get("failed", 0) + 1
        parts = ", ".join(f"{label} {n}" for label, n in sorted(said.items()))
        count = len(self.repositories)
        said_count = f"{count} repositor{'y' if count == 1 else 'ies'}"
        return said_count + (f": {parts}" if parts else "")

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON."""
        return {"repositories": self.repositories}


class Digester:
    """The pending issue and the digest of every tracked repository, as configured.

    ``forge_for(root, settings)`` builds a repository's forge (None: it has none) and
    ``notifiers_for(root, config)`` its channels; the digest goes to the webhook and
    email ones (the issue side of a digest is the pending issue).
    """

    def __init__(
        self,
        store: Store,
        *,
        forge_for: Callable[[Path, ProposeConfig], Forge | None],
        notifiers_for: Callable[[Path, Config], Sequence[Notifier]],
        config_for: Callable[[Path], Config] = load_config,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.forge_for = forge_for
        self.notifiers_for = notifiers_for
        self.config_for = config_for
        self.now = now

    async def run(self) -> DigestResult:
        """Every repository: its pending issue, then its digest (each when configured)."""
        result = DigestResult()
        with self.store.session() as session:
            tracked = notices.repositories(session)
        for name, root in tracked:
            item: dict[str, Any] = {"repository": name}
            try:
                config = self.config_for(Path(root))
                settings = config.notify
                when = pending.period(self.now(), settings.digest)
                if settings.pending_issue or when is not None:
                    overview = self._overview(name)  # read once for the issue and the digest
                if settings.pending_issue:
                    item["pending_issue"] = await self.pending_issue(
                        name, Path(root), config, overview
                    )
                if when is not None:
                    item["digest"] = await self.digest(name, Path(root), config, when, overview)
            except GovernError as exc:
                item["error"] = exc.message
            if len(item) > 1:
                result.repositories.append(item)
        return result

    def _overview(self, name: str) -> Overview:
        with self.store.session() as session:
            return notices.overview(session, repository=name, today=self.now().date())

    async def pending_issue(
        self, name: str, root: Path, config: Config, overview: Overview
    ) -> dict[str, Any]:
        """Open the repository's pending issue, or edit it when its text changed."""
        forge = self.forge_for(root, config.propose)
        if forge is None:
            return {
                "state": RunState.SKIPPED,
                "message": 'the pending issue needs a forge: via = "github" in '
                "[tool.govern.propose]",
            }
        wanted = pending.render(overview, outbox.seal(self.store))
        prefix = key_prefix(KeyKind.PENDING, repository_key(name))
        with self.store.session() as session:
            last = stored_outbox.last_sent(
                session, action=OutboxAction.PENDING_ISSUE, prefix=prefix
            )
            shown = dict(last.result) if last is not None else {}
            after = last.id if last is not None and last.id is not None else 0
        if shown.get("digest") == wanted.text_hash:
            return {
                "state": RunState.UNCHANGED,
                "number": shown.get("number"),
                "url": shown.get("url"),
            }
        number = shown.get("number") if isinstance(shown.get("number"), int) else None

        async def publish() -> dict[str, Any]:
            return await pending.publish(forge, wanted, number=number)

        async def find() -> dict[str, Any] | None:
            return await pending.find(forge, wanted)

        # The key chains on the row last sent: a body that comes back (A, B, A) is sent again.
        done = await outbox.deliver(
            self.store,
            key=outbox_key(KeyKind.PENDING, repository_key(name), after, wanted.text_hash),
            supersedes=prefix,  # a text that was never published: this one replaces it
            action=OutboxAction.PENDING_ISSUE,
            send=publish,
            find=find,
            now=self.now(),
        )
        if done.elsewhere:
            return {"state": RunState.STOOD_ASIDE, "message": "another run is publishing it"}
        if done.state is not OutboxState.SENT:
            return {"state": RunState.FAILED, "message": done.error}
        return {
            "state": str(done.result.get("action", "sent")),
            "number": done.result.get("number"),
            "url": done.result.get("url"),
        }

    async def digest(
        self, name: str, root: Path, config: Config, when: str, overview: Overview
    ) -> dict[str, Any]:
        """Send the period's digest to the webhook and email channels, once."""
        channels = [n for n in self.notifiers_for(root, config) if n.name != "issue"]
        if not channels:
            return {"state": RunState.SKIPPED, "message": "no webhook or email channel"}
        if not overview.actionable:
            return {"state": RunState.SKIPPED, "message": "nothing relaxable or overdue"}
        message = templates.digest(overview, when)
        lines: list[str] = []
        failed = aside = sent = False
        for notifier in channels:
            where = notifier.target(message)
            if isinstance(where, Skipped):
                lines.append(f"{notifier.name}: skipped, {where.reason}")
                continue
            done = await deliver(
                self.store,
                notifier,
                message,
                action=OutboxAction.digest(notifier.name),
                now=self.now(),
            )
            lines.append(_line(notifier.name, where, done))
            sent = sent or done.state is OutboxState.SENT
            aside = aside or done.elsewhere
            failed = failed or (done.state is not OutboxState.SENT and not done.elsewhere)
        state = _state(sent, failed, aside)
        return {"state": state, "period": when, "message": "; ".join(lines)}
