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
    │   └── SchemaOutOfDate      the database is at an older revision: govern db upgrade
    ├── GitError                 git is missing, or a git command failed (git/runner.py)
    │   └── GitMissing           the git executable cannot be started
    ├── PackageIndexError        the package index cannot be used
    │   ├── IndexNotConfigured   no index URL anywhere (index/pipconfig.py)
    │   └── IndexUnavailable     a poll could read no project from the index
    ├── CIError                  a CI provider could not do what was asked (ci/base.py)
    │   ├── CIAuthError          the provider refused the credentials
    │   ├── CIRateLimited        the provider asks to wait, until a given moment
    │   └── CIUnavailable        a transient failure: connection, 5xx, an unreadable answer
    ├── ForgeError               a git remote, GitHub or GitLab could not do what was asked
    │   ├── ForgeAuthError       the forge refused the credentials (forge/base.py)
    │   ├── ForgeRateLimited     the forge asks to wait, until a given moment
    │   ├── ForgeUnavailable     a transient failure: connection, 5xx, an unreadable answer
    │   └── PushError            a push was rejected or could not be made (git/push.py)
    ├── NotifyError              a reminder channel could not deliver (notify/base.py)
    │   ├── NotifyAuthError      the channel refused the credentials (SMTP login, webhook 401/403)
    │   └── NotifyUnavailable    a transient failure: connection, 429, 5xx, SMTP 4xx; retried
    ├── EditRefused              a proposal's file cannot be edited as proposed (edit/common.py)
    │   └── Superseded           the line changed since it was tracked: never forced
    ├── DaemonRunning            another govern daemon holds the store (daemon/lock.py)
    └── LockLost                 the daemon no longer holds its store's lock (daemon/lock.py)

Each external system (the store, git, the package index, a CI provider, a forge, a
notifier) has one root, so a caller can catch everything one system raises. Failures of
one project during a poll are values (``FetchFailed``), not errors.
"""

from __future__ import annotations


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
