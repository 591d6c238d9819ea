"""The closed sets of the lifecycle (docs/design.md): an exclusion's state, a candidate's status,
a CI run's conclusion, the kinds of event in an exclusion's thread.

Each value is the string the store and the JSON contracts hold, so code and SQL name a
member, never the text (tests/exclusions/test_states.py holds it).
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """How a clause keeps released versions out (docs/design.md vocabulary)."""

    NOT_EQUAL = "not-equal"
    CAP = "cap"
    PIN = "pin"
    BAN = "ban"


class SubKind(StrEnum):
    """A finer shape of a kind; ``sentinel`` caps are not debts."""

    EXACT = "exact"  # !=V, ==V, <V
    WILDCARD = "wildcard"  # !=V.*, ==V.*
    INCLUSIVE = "inclusive"  # <=V
    COMPATIBLE = "compatible"  # ~=V (its implied ceiling)
    ARBITRARY = "arbitrary"  # ===V
    SENTINEL = "sentinel"  # <9999: a cap that is no real ceiling
    IMPOSSIBLE = "impossible"  # ==1000000000.0.0 or <0: nothing can satisfy it


class State(StrEnum):
    """Where an exclusion is in its lifecycle (docs/design.md's diagram), in the order shown."""

    HELD = "held"
    CANDIDATE = "candidate"
    VERIFYING = "verifying"
    VERIFIED = "verified"
    PROPOSED = "proposed"
    OVERDUE = "overdue"  # shown and filtered on, never stored: an open one past its review date
    RELAXED = "relaxed"
    REMOVED = "removed"

    @property
    def ended(self) -> bool:
        """True for the states an exclusion leaves its line in (relaxed, removed)."""
        return self in ENDED


ENDED = (State.RELAXED, State.REMOVED)
# The states the verification workflow moves an exclusion between; the others stay.
VERIFYING_STATES = (State.HELD, State.CANDIDATE, State.VERIFYING, State.VERIFIED)
# Open exclusions with a candidate to act on: the dashboard's "pending relaxations".
RELAXABLE = (State.VERIFIED, State.CANDIDATE, State.VERIFYING)
# Open exclusions a proposal can be made for: verified, or proposed (a newer candidate).
PROPOSABLE = (State.VERIFIED, State.PROPOSED)


class CandidateStatus(StrEnum):
    """Where one candidate (a release on one profile) is in its verification."""

    FOUND = "found"  # not tried yet, or tried again with attempts left
    VERIFYING = "verifying"
    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"  # no verdict after every attempt: a person looks
    BAD = "bad"  # failed on another profile of the same exclusion


# A candidate whose version is known bad for its exclusion's line.
REJECTED = (CandidateStatus.FAILED, CandidateStatus.BAD)


class RunKind(StrEnum):
    """What one verification run tries: the candidate, or a run that makes its verdict
    trustworthy (docs/design.md#verdicts)."""

    CANDIDATE = "candidate"  # the candidate release, with the check
    CONTROL = "control"  # the same check on the release the line admits today: must pass
    REPRODUCER = "reproducer"  # the verify= check on a known-bad release: must fail


class Conclusion(StrEnum):
    """How a run ended. Only ``passed`` and ``failed`` are verdicts."""

    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"  # the run could not say (infrastructure, no evidence, wrong version)
    CANCELLED = "cancelled"
    TIMED_OUT = "timed-out"


class EventKind(StrEnum):
    """What one event of an exclusion's thread records (``event.kind``), in lifecycle order."""

    ADDED = "added"  # the clause appeared (or came back: ``detail["restored"]``)
    ANNOTATION_CHANGED = "annotation-changed"  # its reason, links, owner, ... changed
    CHANGED = "changed"  # the clause changed in place; recorded on its successor
    MOVED = "moved"  # its file was renamed
    REMOVED = "removed"
    CANDIDATE_FOUND = "candidate-found"
    VERIFICATION_STARTED = "verification-started"
    VERIFICATION_PASSED = "verification-passed"
    VERIFICATION_FAILED = "verification-failed"
    VERIFICATION_ERRORED = "verification-errored"  # no verdict: errored, cancelled, timed out
    VERDICT_FORGOTTEN = "verdict-forgotten"  # a person took a verdict back: a candidate again
    SETTLED = "settled"  # a ``!=V`` with V known bad: nothing left to relax (recorded once)
    SNOOZED = "snoozed"  # the dashboard's actions
    OWNER_ASSIGNED = "owner-assigned"
    ACKNOWLEDGED = "acknowledged"
    PROPOSAL_OPENED = "proposal-opened"  # a branch or change request carries the relaxation
    PROPOSAL_UPDATED = "proposal-updated"  # a newer candidate updated it
    PROPOSAL_SUPERSEDED = "proposal-superseded"  # the line changed by hand meanwhile
    PROPOSAL_HELD = "proposal-held"  # a lock of the intent could not be regenerated
    REMINDED = "reminded"  # a reminder of one verified version went out (once, any channel)
    MERGED = "merged"  # the change request was merged (the next sync relaxes the line)
    DECLINED = "declined"  # closed without merging: held, that version not proposed again

    @classmethod
    def concluded(cls, conclusion: Conclusion) -> EventKind:
        """The event a run's conclusion adds: passed, failed, or errored for every other."""
        if conclusion is Conclusion.PASSED:
            return cls.VERIFICATION_PASSED
        if conclusion is Conclusion.FAILED:
            return cls.VERIFICATION_FAILED
        return cls.VERIFICATION_ERRORED


# The events of a verification run, started and concluded.
VERIFICATION_EVENTS = (
    EventKind.VERIFICATION_STARTED,
    EventKind.VERIFICATION_PASSED,
    EventKind.VERIFICATION_FAILED,
    EventKind.VERIFICATION_ERRORED,
)
# The events after which the thread shows the reason as it then stood.
REASONED_EVENTS = (EventKind.ADDED, EventKind.CHANGED, EventKind.ANNOTATION_CHANGED)


class ProposalState(StrEnum):
    """Where one proposal (a branch, change request or reminder) stands."""

    OPEN = "open"  # sent: a branch pushed, a change request open, a reminder delivered
    MERGED = "merged"
    DECLINED = "declined"  # closed unmerged: its version is not proposed again
    SUPERSEDED = "superseded"  # the line changed by hand, or a newer candidate took over
    FAILED = "failed"  # its action failed; retried with backoff (the outbox says when)


class ProposeMode(StrEnum):
    """What ``propose = ...`` asks for (per repository, package or exclusion).

    What was done is a :class:`ProposalKind`: ``pull-request`` gives a pull request, or a
    branch with ``via = "git"``; ``remind`` gives a reminder.
    """

    PULL_REQUEST = "pull-request"
    REMIND = "remind"
    NONE = "none"  # tracked and verified, never proposed


class Via(StrEnum):
    """How a proposal travels (``[propose] via``, ``proposal.via``, the JSON ``via``)."""

    GIT = "git"  # a branch pushed to the remote, no forge
    GITHUB = "github"
    GITLAB = "gitlab"
    REMIND = "remind"  # propose = "remind": a reminder on the channels, never configured
    UNKNOWN = "?"  # a run that failed before it read the settings (JSON only)


FORGE_VIAS = (Via.GITHUB, Via.GITLAB)  # the ways with a forge client


class ProposalKind(StrEnum):
    """How a relaxation was proposed (``proposal.kind``)."""

    PULL_REQUEST = "pull-request"  # a pull or merge request on the forge
    BRANCH = "branch"  # a branch pushed (``via = "git"``)
    REMINDER = "reminder"  # a reminder on the configured channels
    SUPERSEDED = "superseded"  # the note that a person changed the line first


class RunState(StrEnum):
    """What one ``govern propose`` run did for one exclusion (its JSON ``state``)."""

    SENT = "sent"
    UNCHANGED = "unchanged"  # the base branch already admits the candidate
    DRY_RUN = "dry-run"
    SUPERSEDED = "superseded"  # the line changed by hand
    FAILED = "failed"  # retried at the next run
    STOOD_ASIDE = "stood-aside"  # another run is sending it right now: left to that run
    LEFT_ALONE = "left-alone"  # the branch holds commits govern did not make: not pushed
    SKIPPED = "skipped"  # nothing to propose (no relaxation, declined before)
    HELD = "held"  # a lock of the intent could not be regenerated: nothing is sent
    NONE = "none"  # ``propose = "none"`` for it


class OutboxState(StrEnum):
    """One outgoing action, written before it is sent (exactly once, across crashes)."""

    PENDING = "pending"  # written, not tried yet (or due again after a failure)
    SENDING = "sending"  # committed just before the request: after a crash, look first
    SENT = "sent"  # confirmed, with what the other side answered
    FAILED = "failed"  # failed; retried at ``next_attempt_at``
    DEAD = "dead"  # failed every attempt: a person looks (shown on the dashboard)
    SUPERSEDED = "superseded"  # unsent, a newer action for the same thing sent; asked again: sent
    # Shown, never stored: a SENT row whose answer was lost (a webhook or an email cannot be
    # asked whether it arrived), marked so (``result["unconfirmed"]``) and not sent again.
    UNCONFIRMED = "unconfirmed"


class OutboxAction(StrEnum):
    """What an outbox row does (stored in ``Outbox.action``; these values are on disk, so
    they never change). A reminder's and a digest's name their channel."""

    PUSH = "push"  # the relaxed file to the exclusion's branch
    OPEN_CHANGE = "open-change"  # a change request opened, or updated to a newer candidate
    LABELS = "labels"  # a change request's labels, reviewers and assignees
    COMMENT = "comment"  # a comment on a change request govern leaves alone
    CLOSE_CHANGE = "close-change"  # a change request closed: its line changed by hand
    PENDING_ISSUE = "pending-issue"  # a repository's pending-relaxations issue, opened or edited
    REMIND_ISSUE = "remind-issue"
    REMIND_WEBHOOK = "remind-webhook"
    REMIND_EMAIL = "remind-email"
    DIGEST_ISSUE = "digest-issue"  # never sent today (digests skip the issue channel)
    DIGEST_WEBHOOK = "digest-webhook"
    DIGEST_EMAIL = "digest-email"

    @classmethod
    def remind(cls, channel: str) -> OutboxAction:
        """A reminder on ``channel`` (a notifier's name); ValueError for an unknown one."""
        return cls(f"remind-{channel}")

    @classmethod
    def digest(cls, channel: str) -> OutboxAction:
        """A digest on ``channel`` (a notifier's name); ValueError for an unknown one."""
        return cls(f"digest-{channel}")
