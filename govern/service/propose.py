"""Proposing: the pull request (or branch, or reminder) that relaxes a verified line, once.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from govern.config import Config, ProposeConfig, load_config
from govern.edit import Edit, Superseded, relax_source
from govern.edit.blocks import same_version
from govern.errors import GovernError
from govern.exclusions.states import (
    EventKind,
    OutboxAction,
    OutboxState,
    ProposalKind,
    ProposalState,
    ProposeMode,
    RunState,
    Via,
)
from govern.forge.base import (
    ChangeRequest,
    ChangeState,
    Forge,
    Opening,
    Seal,
    safe_key,
    split_reviewers,
    with_markers,
)
from govern.git.push import PushError, PushOutcome
from govern.locks.installed import other_pins, pinned_intent, pins_digest
from govern.locks.regenerate import LockChange, LockRefused, Regenerator, locks_of
from govern.notify.base import Notifier
from govern.service import outbox
from govern.service.outcome import SCHEMA as SCHEMA
from govern.service.outcome import Outcome as Outcome
from govern.service.outcome import ProposeResult as ProposeResult
from govern.store import events, proposals
from govern.store import outbox as stored_outbox
from govern.store.db import Store
from govern.store.models import Proposal
from govern.store.outbox import KeyKind, key_prefix, outbox_key
from govern.store.proposals import Work
from govern.text import fenced, is_link, link, quoted

OTHER_NAMES = 8  # names tried after the exclusion's branch name, when it is taken


class Pushes(Protocol):
    """What the proposer needs of the git remote (:class:`govern.git.push.Pusher`)."""

    def default_branch(self) -> str: ...

    def read(self, path: str, *, base: str) -> bytes | None: ...

    def push(
        self,
        *,
        branch: str,
        base: str,
        path: str,
        content: bytes,
        message: str,
        key: str,
        ours: Collection[str] = (),
        also: Mapping[str, bytes] | None = None,
    ) -> Any: ...

    def export(self, base: str, into: Path) -> None: ...


def known_bad(recorded: Sequence[str], new: str) -> list[str]:
    """The known-bad versions a body lists: those recorded, and each one the new line keeps
    out by ``!=`` (it stays out because it is bad: never "(none)" above "14.1.0 stays out")."""
    out = list(recorded)
    try:
        kept = [
            s.version
            for s in Requirement(new.split("#", 1)[0].strip()).specifier
            if s.operator == "!="
        ]
    except InvalidRequirement:
        kept = []
    for version in kept:
        if not any(same_version(version, seen) for seen in out):
            out.append(version)
    return out


def branch_name(settings: ProposeConfig, work: Work) -> str:
    """One branch per exclusion: a newer candidate updates the same change request."""
    safe = re.sub(r"[^a-z0-9.-]+", "-", work.ref.package.lower()).strip("-.") or "package"
    return f"{settings.branch_prefix.rstrip('/')}/{safe}-{work.ref.key[:10]}"


def evidence_lines(work: Work) -> list[str]:
    """``14.1.1 verified on cuda13: <run URL>, installed 14.1.1``, one per passed run."""
    lines = []
    for run in work.runs:
        where = f": {run.url}" if run.url else ""
        installed = f", installed {run.installed}" if run.installed else ""
        lines.append(f"{work.version} verified on {run.profile}{where}{installed}")
    return lines


def commit_message(work: Work, old: str, new: str) -> str:
    """The commit's message: the change, the evidence, and the proposal's trailer."""
    body = "\n".join(f"- {line}" for line in evidence_lines(work)) or "- (no run recorded)"
    return (
        f"Relax {work.ref.package}: {old.strip()} -> {new.strip()}\n\n"
        f"{work.version} passed verification; the known-bad versions stay out.\n\n"
        f"{body}\n\nGovern-Proposal: {work.ref.key}\n"
    )


def candidate_key(work: Work) -> str:
    """The key of the body's second marker: this exclusion and this candidate version (a
    newer candidate's update of the same request is told from the older one's by it)."""
    return safe_key(f"{work.ref.key}:{work.version}")


def title(work: Work, new: str) -> str:
    """The change request's title."""
    return f"Relax {work.ref.package} to {quoted(new)} ({work.version} verified)"


def _covered(work: Work, pins: Sequence[str] | None) -> str:
    """Whether the verification installed what this branch's locks pin of every other
    package (its runs record a digest of the pins they were given)."""
    if pins is None:
        return ""
    if pins_digest(pins) in work.lock_digests:
        return (
            f"\nThe verification installed the candidate with these locks' versions of the "
            f"{len(pins)} other packages they pin.\n"
        )
    if work.lock_digests:
        return (
            "\n**The verification installed other versions of the other packages than these "
            "locks pin** (the base branch moved since it ran): run the checks on this branch "
            "before merging.\n"
        )
    return (
        "\nThe verification did not install these locks' versions of the other packages "
        "(it ran without them): run the checks on this branch before merging.\n"
    )


def body(
    work: Work,
    *,
    old: str,
    new: str,
    diff: str,
    elsewhere: Sequence[str] = (),
    locks: Sequence[LockChange] = (),
    pins: Sequence[str] | None = None,
) -> str:
    """A body a reviewer can decide from (its markers are added when it is sent);
    ``elsewhere``: the other exclusions of the file that the audit reads differently after
    the change. Text from the repository and the CI (the reason, the lines, the paths, the
    runs) is :func:`~govern.text.quoted`: it is shown, never acted on."""
    runs = (
        "\n".join(
            f"| {r.profile} | {r.provider} "
            f"| {f'[run]({r.url})' if r.url and is_link(r.url) else quoted(r.url or '-')} "
            f"| {r.installed or '-'} |"
            for r in work.runs
        )
        or "| - | - | - | - |"
    )
    links = "\n".join(f"- {link(each)}" for each in work.links) or "- (none recorded)"
    history = (
        "\n".join(
            f"- {at:%Y-%m-%d} {kind}{f' ({quoted(said)})' if said else ''}"
            for at, kind, said in work.history
        )
        or "- (no events)"
    )
    bad = ", ".join(quoted(version) for version in known_bad(work.bad_versions, new)) or "(none)"
    note = work.relaxation.note if work.relaxation is not None else ""
    others = (
        "\n### Other lines read differently\n"
        "A comment above the line also explained these; after the change it no longer "
        "does (or now does). Copy it above them if it still applies:\n"
        + "".join(f"- {line}\n" for line in elsewhere)
        if elsewhere
        else ""
    )
    reason = quoted(work.reason) if work.reason else "(none recorded)"
    ref = work.ref
    regenerated = "".join(
        f"- {quoted(change.path)} regenerated by {quoted(change.tool)}: "
        f"{work.ref.package} → {work.version}"
        + (
            "; it also moved "
            + ", ".join(
                f"{quoted(m.package)} {quoted(m.old or '-')} → {quoted(m.new or '-')}"
                for m in change.moved
            )
            if change.moved
            else "; nothing else moved"
        )
        + "\n"
        for change in locks
    )
    lock_section = f"\n### Locks\n{regenerated}{_covered(work, pins)}" if locks else ""
    return f"""\
govern proposes relaxing an exclusion whose candidate passed verification.

**Exclusion:** {quoted(old)} in {quoted(ref.source)} line {ref.line} ({quoted(ref.clause)})
**Reason:** {reason}
**Known bad:** {bad}
**Candidate:** {work.ref.package} {work.version}
**Change:** {quoted(old)} → {quoted(new)} ({note})

### Verification
| profile | CI | run | installed |
|---|---|---|---|
{runs}

### Links
{links}

### The line's history
{history}

### Diff
{fenced(diff.rstrip(), "diff")}
{lock_section}{others}
To stop govern proposing this, set `propose = "none"` for `{work.ref.package}` in
`[tool.govern.propose.packages]`, or for this exclusion alone `"{work.ref.key}" = "none"` in
`[tool.govern.propose.exclusions]` (or drop the relaxation: close this without merging,
and govern will not propose {work.version} again).
"""


def _regenerator(config: Config) -> Regenerator:
    """Lock tools asking the repository's configured index (else their own configuration)."""
    from govern.index.pipconfig import IndexNotConfigured
    from govern.index.settings import index_settings

    try:
        index = index_settings(config, None)
    except IndexNotConfigured:
        return Regenerator.for_index(None)
    return Regenerator.for_index(index)


class Proposer:
    """Proposes the verified exclusions of one store.

    ``pusher_for(root, settings)`` and ``forge_for(root, settings)`` build the git remote
    and the forge of a repository (tests hand in their own); ``now`` is the clock;
    ``notifiers_for(root, config)`` the reminder channels of ``propose = "remind"``.
    """

    def __init__(
        self,
        store: Store,
        *,
        pusher_for: Callable[[Path, ProposeConfig], Pushes],
        forge_for: Callable[[Path, ProposeConfig], Forge | None] | None = None,
        config_for: Callable[[Path], Config] = load_config,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        notifiers_for: Callable[[Path, Config], Sequence[Notifier]] | None = None,
        regenerator_for: Callable[[Config], Regenerator] | None = None,
    ) -> None:
        self.store = store
        # The locks of a relaxed intent are regenerated with the project's own tool (by
        # default the configured index's; govern/locks/regenerate.py).
        self.regenerator_for = regenerator_for or _regenerator
        self.pusher_for = pusher_for
        self.forge_for = forge_for
        self.config_for = config_for
        self.now = now
        self.notifiers_for = notifiers_for
        self._seal: Seal | None = None

    @property
    def seal(self) -> Seal:
        """What signs the markers of this store (read once; made by the first run)."""
        if self._seal is None:
            self._seal = outbox.seal(self.store)
        return self._seal

    async def run(self, query: str | None = None, *, dry_run: bool = False) -> ProposeResult:
        """Propose every verified exclusion (or the one named): docs/commands/propose.md."""
        result = ProposeResult()
        with self.store.session() as session:
            work = proposals.verified(session, query=query)
        for item in work:
            try:
                outcome = await self._one(item, dry_run=dry_run)
            except GovernError as exc:
                outcome = self._outcome(
                    item, Via.UNKNOWN, state=RunState.FAILED, message=exc.message, tip=exc.tip
                )
            result.proposals.append(outcome)
        if not dry_run:
            result.closed = await self.watch()
        return result

    def _outcome(self, work: Work, via: Via, **values: Any) -> Outcome:
        values.setdefault(
            "new", work.relaxation.requirement if work.relaxation is not None else None
        )
        return Outcome(ref=work.ref, via=via, **values)

    async def _one(self, work: Work, *, dry_run: bool) -> Outcome:
        root = Path(work.root)
        config = self.config_for(root)
        settings = config.propose
        mode = settings.mode_for(work.ref.package, work.ref.key)
        via = settings.via
        if mode == ProposeMode.NONE:
            return self._outcome(work, via, state=RunState.NONE, message="propose = none")
        if mode == ProposeMode.REMIND:
            from govern.service.remind import remind  # the notifiers' stack, for reminders only

            notifiers = self.notifiers_for(root, config) if self.notifiers_for else None
            reminded = await remind(self.store, work, notifiers, now=self.now(), dry_run=dry_run)
            return self._outcome(
                work,
                Via.REMIND,
                state=reminded.state,
                message=reminded.message,
                url=reminded.url,
                body=reminded.body,
                sent_now=reminded.sent_now,
            )
        relaxation = work.relaxation
        if relaxation is None or relaxation.specifier is None:
            why = relaxation.refused if relaxation is not None else "not computed yet"
            return self._outcome(work, via, state=RunState.SKIPPED, message=f"no relaxation: {why}")
        with self.store.session() as session:
            for earlier in proposals.proposals_of(session, exclusion_id=work.exclusion_id):
                if earlier.version == work.version and earlier.state == ProposalState.DECLINED:
                    return self._outcome(
                        work,
                        via,
                        state=RunState.SKIPPED,
                        message=f"{work.version} was declined (change request closed unmerged)",
                        url=earlier.url,
                    )
        pusher = await asyncio.to_thread(self.pusher_for, root, settings)
        base = settings.base
        if base is None:
            base = await asyncio.to_thread(pusher.default_branch)
        content = await asyncio.to_thread(pusher.read, work.ref.source, base=base)
        if content is None:
            return self._outcome(
                work, via, state=RunState.SUPERSEDED, message=f"{work.ref.source} is not on {base}"
            )
        edit = _edit(work, content)
        branch = branch_name(settings, work)
        if isinstance(edit, str):  # superseded: the line changed by hand
            if not dry_run:
                self._superseded(work, edit)
                await self._close_superseded(work, settings, edit)
            return self._outcome(work, via, state=RunState.SUPERSEDED, message=edit, branch=branch)
        if not edit.changed:
            admitted = f"{base} already admits {work.version}"
            if not dry_run:  # a person's own change did it: govern's request is redundant
                await self._close_superseded(work, settings, admitted)
            return self._outcome(work, via, state=RunState.UNCHANGED, message=admitted)
        new_text, old_line, new_line, diff = edit.text.encode(), edit.old, edit.new, edit.diff
        try:
            locks, pins = await asyncio.to_thread(
                self._locks,
                pusher,
                base,
                work,
                (
                    new_text,
                    pinned_intent(
                        content,
                        ref=work.ref,
                        fmt=work.format,
                        version=work.version,
                        hashes=work.hashes,
                    ),
                ),
                self.regenerator_for(config),
                config,
            )
        except LockRefused as exc:  # held: no change with a stale lock is ever made
            if not dry_run:
                self._held(work, exc)
            said = await self._remind_held(work, root, config, exc, dry_run=dry_run)
            return self._outcome(
                work,
                via,
                state=RunState.HELD,
                branch=branch,
                message=exc.message + (f"; {said}" if said else ""),
                tip=exc.tip,
            )
        text = body(
            work,
            old=old_line,
            new=new_line,
            diff=diff,
            elsewhere=edit.elsewhere,
            locks=locks,
            pins=pins,
        )
        if dry_run:
            return self._outcome(
                work,
                via,
                state=RunState.DRY_RUN,
                branch=branch,
                new=new_line,
                diff=diff,
                body=text,
            )
        proposal = self._proposal(work, via, branch, old_line, new_line)
        digest = hashlib.sha256(
            new_text + b"".join(c.path.encode() + b"\0" + c.content for c in locks)
        ).hexdigest()[:16]
        message = commit_message(work, old_line, new_line)
        forge = self.forge_for(root, settings) if self.forge_for and via != Via.GIT else None

        async def push() -> dict[str, Any]:
            return await self._push(
                pusher,
                forge,
                work,
                proposal,
                branch=branch,
                base=base,
                content=new_text,
                message=message,
                also={change.path: change.content for change in locks},
            )

        pushed = await outbox.deliver(
            self.store,
            key=outbox_key(KeyKind.PUSH, work.ref.key, digest),
            supersedes=key_prefix(KeyKind.PUSH, work.ref.key),  # the file as it read before
            action=OutboxAction.PUSH,
            send=push,
            proposal_id=proposal,
            now=self.now(),
        )
        if pushed.state is not OutboxState.SENT:
            return self._undelivered(work, via, pushed, branch=branch, new=new_line)
        branch = str(pushed.result.get("branch") or branch)
        if pushed.result.get("outcome") == PushOutcome.FOREIGN:
            return await self._left_alone(
                forge, work, via, proposal, pushed.result, old=old_line, new=new_line
            )
        change: ChangeRequest | None = None
        sent_now = pushed.sent_now
        if forge is not None:
            opening = self._opening(work, settings, branch, base, new_line, text)
            change, done = await self._change(forge, work, opening, proposal)
            if change is None and done.state is OutboxState.SENT:
                number = done.result.get("number")
                left = {"branch": branch, "number": number, "note": _theirs(number, branch)}
                return await self._left_alone(
                    forge, work, via, proposal, left, old=old_line, new=new_line
                )
            if change is None:
                return self._undelivered(work, via, done, branch=branch, new=new_line)
            sent_now = sent_now or done.sent_now
        self._opened(work, proposal, via, branch, change)
        if forge is not None and change is not None:
            # Labels, reviewers and assignees are a delivery of their own: a crash right
            # after the request was created, or a failed call, is retried, not forgotten.
            dressed = await self._label(forge, work, opening, change.number, proposal)
            if dressed.state is not OutboxState.SENT:
                return self._undelivered(
                    work,
                    via,
                    dressed,
                    branch=branch,
                    new=new_line,
                    url=change.url,
                    number=change.number,
                )
            sent_now = sent_now or dressed.sent_now
        return self._outcome(
            work,
            via,
            state=RunState.SENT,
            branch=branch,
            new=new_line,
            url=change.url if change else None,
            number=change.number if change else None,
            message=None if sent_now else "already proposed: nothing sent again",
            sent_now=sent_now,
        )

    @staticmethod
    def _locks(
        pusher: Pushes,
        base: str,
        work: Work,
        intents: tuple[bytes, bytes | None],
        regenerator: Regenerator,
        config: Config,
    ) -> tuple[list[LockChange], tuple[str, ...] | None]:
        """The locks of the relaxed intent, regenerated in a copy of the base branch (with
        the local checkout's configuration: a command named there runs, never one a branch
        on the remote names), and what they then pin of every other package (None: the
        intent has no lock)."""
        with tempfile.TemporaryDirectory(prefix="govern-tree-") as scratch:
            tree = Path(scratch)
            pusher.export(base, tree)
            content, pinned = intents
            locks = locks_of(tree, work.ref.source, config)
            changes = regenerator.regenerate(
                tree,
                intent=work.ref.source,
                content=content,
                pinned=pinned,
                package=work.ref.package,
                version=work.version,
                config=config,
                locks=locks,
            )
            package = canonicalize_name(work.ref.package)
            return changes, other_pins(tree, locks, package) if locks else None

    def _undelivered(self, work: Work, via: Via, done: outbox.Delivered, **values: Any) -> Outcome:
        """The outcome of an action not sent: another run is at it (this one stood aside),
        or it failed and is retried."""
        if done.elsewhere:
            return self._outcome(
                work,
                via,
                state=RunState.STOOD_ASIDE,
                message=f"another run is sending it ({done.key}); left to that run",
                **values,
            )
        return self._outcome(work, via, state=RunState.FAILED, message=done.error, **values)

    async def _push(
        self,
        pusher: Pushes,
        forge: Forge | None,
        work: Work,
        proposal: int,
        *,
        branch: str,
        base: str,
        content: bytes,
        message: str,
        also: Mapping[str, bytes] | None = None,
    ) -> dict[str, Any]:
        """Push the change (the intent, and its regenerated locks in ``also``) to the
        exclusion's branch, never over someone else's commits.

        The branch is the one govern pushed to before, replaced only when its tip is a
        commit govern pushed there. When it holds other commits (a reviewer's fix-up) or a
        change request govern did not open, it is left alone while govern's change request
        on it is open (``outcome: foreign``); otherwise (a name already taken, a branch
        left behind) the next free name is used: ``branch``, ``branch-2``, ...
        """
        with self.store.session() as session:
            record = stored_outbox.pushed_to(session, prefix=key_prefix(KeyKind.PUSH, work.ref.key))
            live = {
                p.branch
                for p in proposals.proposals_of(session, exclusion_id=work.exclusion_id)
                if p.id != proposal
                and p.state == ProposalState.OPEN
                and p.kind != ProposalKind.REMINDER
                and (p.number is not None or p.kind == ProposalKind.BRANCH)
            }
        fresh = [branch, *(f"{branch}-{n}" for n in range(2, 2 + OTHER_NAMES))]
        names = [record.branch, *(n for n in fresh if n != record.branch)] if record else fresh
        for name in names:
            mine = record is not None and name == record.branch
            theirs = await self._foreign_change(forge, work, name)
            if theirs is None:
                pushed = await asyncio.to_thread(
                    pusher.push,
                    branch=name,
                    base=base,
                    path=work.ref.source,
                    content=content,
                    message=message,
                    key=work.ref.key,
                    ours=record.shas if record is not None and mine else frozenset(),
                    also=also or {},
                )
                outcome = PushOutcome(getattr(pushed, "outcome", PushOutcome.PUSHED))
                if outcome is not PushOutcome.FOREIGN:
                    said = {"sha": pushed.sha, "branch": name, "outcome": str(outcome)}
                    if name != names[0]:
                        said["note"] = f"{names[0]} is someone else's: pushed to {name}"
                    return said
                if mine and name in live:
                    return {
                        "sha": pushed.sha,
                        "branch": name,
                        "outcome": str(PushOutcome.FOREIGN),
                        "note": f"left alone: {name} holds commits govern did not make"
                        f" (tip {str(pushed.sha)[:12]})",
                    }
            elif mine:
                return {
                    "branch": name,
                    "outcome": str(PushOutcome.FOREIGN),
                    "number": theirs.number,
                    "note": _theirs(theirs.number, name),
                }
            # A name already taken (or govern's old branch, now someone else's): the next.
        raise PushError(
            f"the branches {names[0]} to {names[-1]} all hold commits govern did not make",
            tip="Delete the branches no longer needed, or set another branch-prefix.",
        )

    async def _foreign_change(
        self, forge: Forge | None, work: Work, branch: str
    ) -> ChangeRequest | None:
        """An open change request from ``branch`` that govern did not open for this
        exclusion (a person's): pushing to the branch would change it."""
        if forge is None:
            return None
        for change in await forge.changes_on(branch):
            # Govern's own request ends in its signed marker (or, opened before markers
            # were signed, the unsigned one: only people who can push to the branch can
            # open a request from it).
            if not self.seal.marker("proposal", work.ref.key).ends(change.body, unsigned=True):
                return change
        return None

    async def _left_alone(
        self,
        forge: Forge | None,
        work: Work,
        via: Via,
        proposal: int,
        pushed: dict[str, Any],
        *,
        old: str,
        new: str,
    ) -> Outcome:
        """The branch holds commits (or a change request) govern did not make: say so on
        the change request there, once, instead of pushing over them."""
        branch = str(pushed["branch"])
        number = pushed.get("number")
        if not isinstance(number, int):
            with self.store.session() as session:
                mine = [
                    p.number
                    for p in proposals.proposals_of(session, exclusion_id=work.exclusion_id)
                    if p.state == ProposalState.OPEN and p.branch == branch and p.number
                ]
            number = mine[-1] if mine else None
        note = str(pushed.get("note") or f"left alone: {branch}")
        url: str | None = None
        if forge is not None and isinstance(number, int):
            evidence = "\n".join(f"- {quoted(line)}" for line in evidence_lines(work))
            comment = with_markers(
                f"govern did not push {quoted(work.ref.package)} {quoted(work.version)} to"
                f" {quoted(branch)}: the branch holds commits (or a change request) govern did"
                f" not make, and govern never overwrites them. The change it would make:"
                f" {quoted(old.strip())} → {quoted(new.strip())}.\n\n{evidence}",
                self.seal.marker("left-alone", candidate_key(work)),
            )
            target = number

            async def say() -> dict[str, Any]:
                done = await forge.comment_change(target, comment)
                return {"id": done.id, "url": done.url, "number": target}

            said = await outbox.deliver(
                self.store,
                key=outbox_key(KeyKind.LEFT_ALONE, work.ref.key, work.version),
                action=OutboxAction.COMMENT,
                send=say,
                proposal_id=proposal,
                now=self.now(),
            )
            if said.state is not OutboxState.SENT:
                return self._undelivered(work, via, said, branch=branch, new=new)
            url = str(said.result.get("url") or "") or None
        return self._outcome(
            work,
            via,
            state=RunState.LEFT_ALONE,
            branch=branch,
            new=new,
            url=url,
            number=number if isinstance(number, int) else None,
            message=note,
        )

    def _opening(
        self, work: Work, settings: ProposeConfig, branch: str, base: str, new_line: str, text: str
    ) -> Opening:
        """What the change request is opened with: ``text`` ending in govern's signed
        markers (this exclusion's proposal, and this candidate)."""
        text = with_markers(
            text,
            self.seal.marker("proposal", work.ref.key),
            self.seal.marker("candidate", candidate_key(work)),
        )
        # Reviewers from the owner's @-mentions only: "Jane Doe" names no login. The users
        # are assigned too (a team cannot be), so the request shows in their own lists.
        users, teams = split_reviewers([o for o in (work.owner or "").split() if o[:1] == "@"])
        return Opening(
            branch=branch,
            base=base,
            title=title(work, new_line),
            body=text,
            labels=settings.labels,
            reviewers=tuple(users),
            team_reviewers=tuple(teams),
            assignees=tuple(users),
            draft=settings.draft,
        )

    async def _label(
        self, forge: Forge, work: Work, opening: Opening, number: int, proposal: int
    ) -> outbox.Delivered:
        """The change request's labels, reviewers and assignees, once per request."""

        async def label() -> dict[str, Any]:
            await forge.label_change(number, opening)
            return {"number": number, "labels": list(opening.labels)}

        key = outbox_key(KeyKind.LABELS, work.ref.key, number)
        if not (opening.labels or opening.reviewers or opening.team_reviewers or opening.assignees):
            return outbox.Delivered(key, OutboxState.SENT, {})
        return await outbox.deliver(
            self.store,
            key=key,
            action=OutboxAction.LABELS,
            send=label,
            proposal_id=proposal,
            now=self.now(),
        )

    async def _change(
        self, forge: Forge, work: Work, opening: Opening, proposal: int
    ) -> tuple[ChangeRequest | None, outbox.Delivered]:
        """The change request (opened, updated or found) and its delivery (None: not sent)."""
        mark = self.seal.marker("proposal", work.ref.key)
        candidate = self.seal.marker("candidate", candidate_key(work))
        branch, base, text = opening.branch, opening.base, opening.body

        async def find() -> dict[str, Any] | None:
            # This version's request (opened, or updated to it), whatever its state: one a
            # person closed after a crash is closed, not opened again (watch records it).
            found = await forge.find_change(branch=branch, marker=mark)
            if found is None or not candidate.ends(found.body, unsigned=True):
                return None
            return _change_dict(found)

        async def open_or_update() -> dict[str, Any]:
            existing = await forge.find_change(branch=branch, marker=mark)
            if existing is not None and existing.state is ChangeState.OPEN:
                return _change_dict(
                    await forge.update_change(existing.number, title=opening.title, body=text)
                )
            theirs = await self._foreign_change(forge, work, branch)
            if theirs is not None:  # a person opened one on govern's branch meanwhile:
                # opening another is refused (GitLab's 409) on every retry; it is theirs
                return {"foreign": True, "number": theirs.number, "url": theirs.url}
            return _change_dict(await forge.open_change(opening))

        done = await outbox.deliver(
            self.store,
            key=outbox_key(KeyKind.CHANGE, work.ref.key, work.version),
            supersedes=key_prefix(KeyKind.CHANGE, work.ref.key),  # an older candidate's request
            action=OutboxAction.OPEN_CHANGE,
            send=open_or_update,
            find=find,
            proposal_id=proposal,
            now=self.now(),
        )
        if done.state is not OutboxState.SENT or done.result.get("foreign"):
            return None, done
        change = ChangeRequest(
            number=int(done.result["number"]),
            url=str(done.result["url"]),
            state=ChangeState(done.result.get("state", ChangeState.OPEN)),
            branch=branch,
            base=base,
        )
        return change, done

    # -- the store -----------------------------------------------------------------------

    def _proposal(self, work: Work, via: Via, branch: str, old: str, new: str) -> int:
        with self.store.session(write=True) as session:
            return proposals.open_proposal(
                session,
                key=outbox_key(KeyKind.PROPOSAL, work.ref.key, work.version),
                work=work,
                kind=ProposalKind.BRANCH if via == Via.GIT else ProposalKind.PULL_REQUEST,
                via=via,
                now=self.now(),
                old=old,
                new=new,
                branch=branch,
            )

    def _opened(
        self, work: Work, proposal_id: int, via: Via, branch: str, change: ChangeRequest | None
    ) -> None:
        when = self.now()
        with self.store.session(write=True) as session:
            first = proposals.mark_sent(
                session,
                proposal_id=proposal_id,
                at=when,
                number=change.number if change is not None else None,
                url=change.url if change is not None else None,
                branch=branch,  # another name when the exclusion's was taken
            )
            # A newer candidate took over the same branch: older change requests end.
            older = proposals.supersede_older(
                session, proposal_id=proposal_id, exclusion_id=work.exclusion_id
            )
            if first:
                kind = EventKind.PROPOSAL_UPDATED if older else EventKind.PROPOSAL_OPENED
                detail = {"version": work.version, "via": via, "branch": branch}
                if change is not None:
                    detail["url"] = change.url
                # A verified exclusion is proposed now (the lifecycle's table).
                events.record(
                    session,
                    work.exclusion_id,
                    kind,
                    detail,
                    when,
                    pull_request=change.number if change else None,
                )

    async def _remind_held(
        self, work: Work, root: Path, config: Config, refused: LockRefused, *, dry_run: bool
    ) -> str | None:
        """With reminder channels configured, a held proposal still reminds the people of
        the line (once per version), saying what blocks the change; what it did, or None."""
        notifiers = self.notifiers_for(root, config) if self.notifiers_for else None
        if not notifiers:
            return None
        from govern.service.remind import remind

        reminded = await remind(
            self.store, work, notifiers, now=self.now(), dry_run=dry_run, blocked=refused.message
        )
        return f"reminder: {reminded.message}" if reminded.message else "reminder sent"

    def _held(self, work: Work, refused: LockRefused) -> None:
        """The thread says once why this version is held (a ``proposal-held`` event for
        each new reason: the tool's own error, bounded)."""
        detail = {"version": work.version, "why": refused.message}
        with self.store.session(write=True) as session:
            if (
                proposals.last_event_detail(
                    session, exclusion_id=work.exclusion_id, kind=EventKind.PROPOSAL_HELD
                )
                == detail
            ):
                return
            events.record(session, work.exclusion_id, EventKind.PROPOSAL_HELD, detail, self.now())

    def _superseded(self, work: Work, why: str) -> None:
        with self.store.session(write=True) as session:
            key = outbox_key(KeyKind.SUPERSEDED, work.ref.key, work.version)
            if not proposals.note_superseded(session, key=key, work=work, at=self.now()):
                return  # said once
            events.record(
                session,
                work.exclusion_id,
                EventKind.PROPOSAL_SUPERSEDED,
                {"version": work.version, "why": why},
                self.now(),
            )

    async def _close_superseded(self, work: Work, settings: ProposeConfig, why: str) -> None:
        """Close the exclusion's open change requests with a comment saying why, once each
        (a line a person changed, or one their own change relaxed: the base admits it)."""
        if self.forge_for is None or settings.via == Via.GIT:
            return
        with self.store.session() as session:
            still_open = [
                p
                for p in proposals.proposals_of(session, exclusion_id=work.exclusion_id)
                if p.state == ProposalState.OPEN and p.number is not None
            ]
        forge = self.forge_for(Path(work.root), settings) if still_open else None
        if forge is not None:
            for row in still_open:
                assert row.number is not None
                try:
                    change = await forge.get_change(row.number)
                except GovernError:
                    continue  # asked again on the next run; never a verdict
                if change.state is not ChangeState.OPEN:
                    continue  # merged (the line admits it now) or closed meanwhile: the
                    # run's watch records which, and nothing is said on it
                await self._close(forge, row, work.ref.key, why)

    async def _close(self, forge: Forge, row: Proposal, key: str, why: str) -> None:
        """Comment on a superseded change request and close it, through the outbox (a
        failure is tried again on the next run); the proposal is then ``superseded``."""
        number, proposal_id = row.number, row.id
        assert number is not None
        assert proposal_id is not None
        comment = with_markers(
            f"govern closes this: {why}. A person changed the line after {row.version} was "
            "verified, so this relaxation is no longer proposed.",
            self.seal.marker("superseded", key),
        )

        async def close() -> dict[str, Any]:
            return _change_dict(await forge.close_change(number, comment=comment))

        async def closed_already() -> dict[str, Any] | None:
            found = await forge.get_change(number)
            return _change_dict(found) if found.state is not ChangeState.OPEN else None

        done = await outbox.deliver(
            self.store,
            key=outbox_key(KeyKind.CLOSE, key, number),
            action=OutboxAction.CLOSE_CHANGE,
            send=close,
            find=closed_already,
            proposal_id=proposal_id,
            now=self.now(),
        )
        if done.state is OutboxState.SENT:
            with self.store.session(write=True) as session:
                proposals.set_proposal_state(
                    session, proposal_id=proposal_id, state=ProposalState.SUPERSEDED, at=self.now()
                )

    async def watch(self) -> list[dict[str, Any]]:
        """Open change requests merged or closed since the last look (a poll of the forge)."""
        closed: list[dict[str, Any]] = []
        if self.forge_for is None:
            return closed
        with self.store.session() as session:
            watched = [
                (p, proposals.root_of(session, exclusion_id=p.exclusion_id), gone)
                for p in proposals.open_changes(session)
                for gone in [proposals.changed_by_hand(session, exclusion_id=p.exclusion_id)]
            ]
        for row, root, gone in watched:
            if root is None or row.number is None:
                continue
            try:
                settings = self.config_for(Path(root)).propose
                forge = self.forge_for(Path(root), settings)
                if forge is None:
                    continue
                change = await forge.get_change(row.number)
            except GovernError:
                continue  # asked again next time (one repository's forge never stops the
                # others); never a verdict
            if change.state is not ChangeState.OPEN:
                closed.append(self.closed(row.id or 0, change.state))
            elif gone is not None:  # a sync saw the line change by hand: close it
                await self._close(forge, row, gone, "the line changed in the repository")
        return closed

    def closed(self, proposal_id: int, state: ChangeState) -> dict[str, Any]:
        """Record a change request merged or closed unmerged (see :func:`record_closed`)."""
        return record_closed(self.store, proposal_id=proposal_id, state=state, now=self.now())


def record_closed(
    store: Store, *, proposal_id: int, state: ChangeState, now: datetime
) -> dict[str, Any]:
    """A change request merged (``merged``: the next sync relaxes the line) or closed
    unmerged (``declined``: held again, and that version is not proposed again)."""
    with store.session(write=True) as session:
        row = proposals.proposal_by_id(session, proposal_id=proposal_id)
        if row.state != ProposalState.OPEN:
            return {"proposal": row.id, "number": row.number, "state": row.state}
        merged = state is ChangeState.MERGED
        ended = ProposalState.MERGED if merged else ProposalState.DECLINED
        row = proposals.set_proposal_state(session, proposal_id=proposal_id, state=ended, at=now)
        # Declined: held again (the lifecycle's table); merged: the next sync relaxes it.
        events.record(
            session,
            row.exclusion_id,
            EventKind.MERGED if merged else EventKind.DECLINED,
            {"version": row.version, "url": row.url},
            now,
            pull_request=row.number,
        )
        return {"proposal": row.id, "number": row.number, "state": row.state}


def _theirs(number: object, branch: str) -> str:
    """The note for a branch left alone because a person's change request is open on it."""
    return f"left alone: change request #{number} on {branch} was not opened by govern"


def _change_dict(change: ChangeRequest) -> dict[str, Any]:
    return {"number": change.number, "url": change.url, "state": str(change.state)}


def _edit(work: Work, content: bytes) -> Edit | str:
    """The file's edit (``changed`` False: nothing to change), or why the proposal is
    superseded.

    Every source format is edited (:func:`govern.edit.relax_source`). A
    ``--hash`` line takes the candidate's hashes from the index's file list, as the poll
    stored it; without every one of them it is refused with the reason.
    """
    assert work.relaxation is not None
    assert work.relaxation.specifier is not None
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise GovernError(f"{work.ref.source} is not UTF-8 text") from None
    try:
        done = relax_source(
            text,
            ref=work.ref,
            format=work.format,
            specifier=work.relaxation.specifier,
            candidate=work.version,
            evidence=evidence_lines(work),
            bad_versions=work.bad_versions,
            hashes=work.hashes or None,
        )
    except Superseded as exc:
        return exc.message
    return done


__all__: Sequence[str] = ("SCHEMA", "Outcome", "ProposeResult", "Proposer", "body")
