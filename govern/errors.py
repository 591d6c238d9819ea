"""The error tree of govern.

Library code raises these; the CLI is the one boundary that turns them into a
one-line message, a ``Tip:`` and exit code 2. Problems *in the audited files*
are never errors: they are :class:`govern.policy.Finding` values.

::

    GovernError                  the run itself could not be done (exit 2)
    ├── UsageError               a bad option or argument combination
    ├── ConfigError              invalid [tool.govern] / .govern.toml
    ├── PolicyError              a policy that cannot be loaded or is invalid
    ├── SourceNotFound           a path named by the user does not exist
    ├── StoreError               the database cannot be opened, migrated or written
    │   ├── SchemaOutOfDate      the database is at an older revision: govern db upgrade
    │   └── TransitionRefused    an event the lifecycle does not allow (lifecycle.py)
    ├── GitError                 git is missing, or a git command failed (git/runner.py)
    │   └── GitMissing           the git executable cannot be started
    ├── PackageIndexError        the package index cannot be used
    │   ├── IndexNotConfigured   no index URL anywhere (index/pipconfig.py)
    │   └── IndexUnavailable     a poll could read no project from the index
    ├── RemoteError              a remote API could not do what was asked (.status: its HTTP status)
    │   ├── RemoteAuthError      the remote refused the credentials (a missing, wrong or weak token)
    │   ├── RemoteRateLimited    the remote asks to wait, until a given moment (.until)
    │   ├── RemoteUnavailable    a transient failure: connection, 5xx, an unreadable answer
    │   ├── CIError              a CI provider could not do what was asked
    │   │   ├── CIAuthError      + RemoteAuthError
    │   │   ├── CIRateLimited    + RemoteRateLimited
    │   │   └── CIUnavailable    + RemoteUnavailable
    │   ├── ForgeError           a git remote, GitHub or GitLab could not do what was asked
    │   │   ├── ForgeAuthError   + RemoteAuthError
    │   │   ├── ForgeRateLimited + RemoteRateLimited
    │   │   ├── ForgeUnavailable + RemoteUnavailable
    │   │   └── PushError        a push was rejected or could not be made (git/push.py)
    │   └── NotifyError          a reminder channel could not deliver (.maybe_sent: it may have)
    │       ├── NotifyAuthError  + RemoteAuthError: an SMTP login, a webhook's 401/403
    │       └── NotifyUnavailable + RemoteUnavailable: also a 429 or an SMTP 4xx; retried
    ├── EditRefused              a proposal's file cannot be edited as proposed (edit/common.py)
    │   └── Superseded           the line changed since it was tracked: never forced
    ├── LockRefused              a lock of a relaxed intent cannot be regenerated (locks/)
    ├── DaemonRunning            another govern daemon holds the store (daemon/lock.py)
    └── LockLost                 the daemon no longer holds its store's lock (daemon/lock.py)

Each external system (the store, git, the package index, a CI provider, a forge, a
notifier) has one root, so a caller can catch everything one system raises. The remote
APIs' errors are one family: ``+ RemoteAuthError`` marks a second parent, so ``except
ForgeError`` catches a forge's rate limit and ``except RemoteRateLimited`` any system's.
The REST client (:class:`govern.http.client.ApiClient`) raises in the family its caller
passes (:class:`ErrorFamily`: ``CI_ERRORS``, ``FORGE_ERRORS``). Failures of one project
during a poll are values (``FetchFailed``), not errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


class GovernError(Exception):
    """Root of govern's errors: the requested run cannot be carried out."""

    def __init__(self, message: str, *, tip: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.tip = tip


class UsageError(GovernError):
    """A command-line option or argument that cannot be honoured."""


class ConfigError(GovernError):
    """Configuration (``[tool.govern]`` or ``.govern.toml``) that is invalid."""


class PolicyError(GovernError):
    """A policy file that cannot be found, parsed or validated."""


class SourceNotFound(GovernError):
    """A path named on the command line does not exist."""


class StoreError(GovernError):
    """The database cannot be reached, migrated, read or written."""


class SchemaOutOfDate(StoreError):
    """The database holds an older (or unknown) schema revision."""


class PackageIndexError(GovernError):
    """Root of the package index's errors: the index cannot be configured or read."""


class IndexUnavailable(PackageIndexError):
    """A poll in which every project failed: the index (or the way to it) is the problem."""


# -- the remote APIs -----------------------------------------------------------------------


class RemoteError(GovernError):
    """A remote API could not do what was asked. Never a verdict on what govern tracks.

    ``status`` is the HTTP status (or SMTP reply code) of the answer that caused the error,
    when an answer did (a connection error, a time-out or a local check has none).
    """

    def __init__(self, message: str, *, tip: str | None = None, status: int | None = None):
        super().__init__(message, tip=tip)
        self.status = status


class RemoteAuthError(RemoteError):
    """The remote refused the credentials (a missing, wrong or under-scoped token)."""


class RemoteRateLimited(RemoteError):
    """The remote asks to wait: ``until`` is when to try again (aware UTC; None: unknown)."""

    def __init__(
        self,
        message: str,
        *,
        until: datetime | None = None,
        tip: str | None = None,
        status: int | None = None,
    ):
        super().__init__(message, tip=tip, status=status)
        self.until = until


class RemoteUnavailable(RemoteError):
    """A transient failure: connection errors, 5xx, an answer that could not be read."""


class CIError(RemoteError):
    """A CI provider could not do what was asked. Never a verdict on the candidate."""


class CIAuthError(CIError, RemoteAuthError):
    """The provider refused the credentials (a missing, wrong or under-scoped token)."""


class CIRateLimited(CIError, RemoteRateLimited):
    """The provider asks to wait: ``until`` is when to try again (None: unknown)."""


class CIUnavailable(CIError, RemoteUnavailable):
    """A transient failure: connection errors, 5xx, an answer that could not be read."""


class ForgeError(RemoteError):
    """A forge (git remote, GitHub, GitLab) could not do what was asked."""


class ForgeAuthError(ForgeError, RemoteAuthError):
    """The forge refused the credentials (or they lack a permission)."""


class ForgeRateLimited(ForgeError, RemoteRateLimited):
    """The forge asks to wait; ``until`` is when to try again (aware UTC), if it said."""


class ForgeUnavailable(ForgeError, RemoteUnavailable):
    """A transient failure: connection, 5xx, an answer that cannot be read. Retried."""


class NotifyError(RemoteError):
    """A channel could not deliver a message (a refusal that trying again will not fix)."""

    def __init__(
        self,
        message: str,
        *,
        tip: str | None = None,
        status: int | None = None,
        maybe_sent: bool = False,
    ) -> None:
        super().__init__(message, tip=tip, status=status)
        # The message may have arrived all the same (a time-out after it left): a channel
        # that cannot be searched does not send it again (govern.service.outbox).
        self.maybe_sent = maybe_sent


class NotifyAuthError(NotifyError, RemoteAuthError):
    """The channel refused the credentials (an SMTP login, a revoked webhook)."""


class NotifyUnavailable(NotifyError, RemoteUnavailable):
    """A transient failure: connection, time-out, 429, 5xx, an SMTP 4xx. Retried."""


@dataclass(frozen=True, slots=True)
class ErrorFamily:
    """The classes one remote system raises, by kind: the REST client raises its errors
    as these, so ``except ForgeError`` catches everything a forge's requests raise."""

    error: type[RemoteError]
    auth: type[RemoteAuthError]
    rate_limited: type[RemoteRateLimited]
    unavailable: type[RemoteUnavailable]


CI_ERRORS = ErrorFamily(CIError, CIAuthError, CIRateLimited, CIUnavailable)
FORGE_ERRORS = ErrorFamily(ForgeError, ForgeAuthError, ForgeRateLimited, ForgeUnavailable)
